"""Positive cases of the independent set: one secret per snippet, at its ``§kind§`` marker.

Written from how secrets really land in repositories and pastes, not from any labelled corpus.
"""

from __future__ import annotations

# Provider tokens, wherever they are written.
PROVIDERS: list[tuple[str, str]] = [
    ("env-github", "GITHUB_TOKEN=§ghp§\n"),
    (
        "actions-gh-pat",
        "      - uses: actions/checkout@v4\n        with:\n          token: §github_pat§\n",
    ),
    ("gitcred-oauth", "https://x-access-token:§ghs§@github.com\n"),
    (
        "gh-hosts-yml",
        "github.com:\n    user: octo\n    oauth_token: §gho§\n    git_protocol: ssh\n",
    ),
    ("gitlab-ci-var", "variables:\n  GITLAB_TOKEN: §glpat§\n  GIT_DEPTH: 10\n"),
    ("gitlab-runner", '[[runners]]\n  url = "https://gitlab.com/"\n  token = "§glrt§"\n'),
    ("git-remote-gitlab", "git remote add origin https://oauth2:§glpat§@gitlab.com/acme/app.git\n"),
    ("slack-py", 'client = WebClient(token="§slack_bot§")\n'),
    ("slack-user-md", "Use this token for the export script: `§slack_user§`\n"),
    ("slack-hook-json", '{\n  "webhook_url": "§slack_hook§",\n  "channel": "#deploys"\n}\n'),
    ("aws-creds-id", "[default]\naws_access_key_id = §aws_id§\nregion = eu-west-1\n"),
    (
        "aws-creds-secret",
        "[prod]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = §aws_secret§\n",
    ),
    ("aws-boto3", 's3 = boto3.client("s3", aws_secret_access_key="§aws_secret§")\n'),
    (
        "aws-tf-provider",
        'provider "aws" {\n  region     = "us-east-1"\n  secret_key = "§aws_secret§"\n}\n',
    ),
    ("aws-export", "export AWS_SECRET_ACCESS_KEY=§aws_secret§\n"),
    ("google-maps-js", "const map = loadMaps({ key: '§google_api§' });\n"),
    (
        "google-maps-html",
        '<script src="https://maps.googleapis.com/maps/api/js?key=§google_api§"></script>\n',
    ),
    (
        "google-client-secret-json",
        '{"installed":{"client_id":"1234-abc.apps.googleusercontent.com",'
        '"client_secret":"§gocspx§"}}\n',
    ),
    ("google-access-token-log", "DEBUG refreshing credentials, token=§ya29§ expires_in=3599\n"),
    ("stripe-ruby", "Stripe.api_key = '§stripe_sk§'\n"),
    ("stripe-restricted-env", "STRIPE_KEY=§stripe_rk§\n"),
    ("stripe-test-php", "\\Stripe\\Stripe::setApiKey('§stripe_test§');\n"),
    ("stripe-webhook", "STRIPE_WEBHOOK_SECRET: §whsec§\n"),
    ("sendgrid-yaml", "email:\n  provider: sendgrid\n  api_key: §sendgrid§\n"),
    ("mailgun-py", 'requests.post(url, auth=("api", "§mailgun§"), data=msg)\n'),
    ("twilio-cs", 'var twilioApiSecret = "§alnum32§";\n'),
    ("npmrc", "//registry.npmjs.org/:_authToken=§npm§\n"),
    ("pypirc", "[pypi]\n  username = __token__\n  password = §pypi§\n"),
    ("docker-login-pat", "echo §dckr§ | docker login -u acme --password-stdin\n"),
    ("openai-notebook", '    "openai.api_key = \\"§openai§\\"\\n",\n'),
    ("openai-env", "OPENAI_API_KEY=§openai_old§\n"),
    ("anthropic-ts", "const anthropic = new Anthropic({ apiKey: '§anthropic§' });\n"),
    ("hf-cli", "huggingface-cli login --token §hf§\n"),
    ("groq-py", 'client = Groq(api_key="§groq§")\n'),
    ("replicate-env", "REPLICATE_API_TOKEN=§replicate§\n"),
    ("discord-bot-js", "client.login('§discord_bot§');\n"),
    ("discord-hook", "DISCORD_WEBHOOK=§discord_hook§\n"),
    ("telegram-py", 'bot = telebot.TeleBot("§telegram§")\n'),
    ("shopify-env", "SHOPIFY_ACCESS_TOKEN=§shopify§\n"),
    ("vault-token", "export VAULT_ADDR=https://vault.internal:8200\nexport VAULT_TOKEN=§hvs§\n"),
    ("doppler", "DOPPLER_TOKEN=§doppler§ doppler run -- npm start\n"),
    ("pulumi-ci", "env:\n  PULUMI_ACCESS_TOKEN: §pulumi§\n"),
    ("terraformrc", 'credentials "app.terraform.io" {\n  token = "§tfc§"\n}\n'),
    (
        "databricks-cfg",
        "[DEFAULT]\nhost = https://adb-123.azuredatabricks.net\ntoken = §databricks§\n",
    ),
    ("grafana-sa", 'grafana_auth = "§grafana_sa§"\n'),
    ("newrelic-yml", "common: &default_settings\n  license_key: x\n  api_key: §newrelic§\n"),
    ("linear-ts", "const linear = new LinearClient({ apiKey: '§linear§' })\n"),
    ("postman-env", '{"key": "postman_api_key", "value": "§postman§", "enabled": true}\n'),
    ("notion-py", 'notion = Client(auth="§notion§")\n'),
    ("supabase-cli", "supabase login --token §supabase§\n"),
    (
        "age-key-file",
        "# created: 2024-03-01T10:00:00Z\n# public key: age1ql3z7hjy54pw3hyww5ay\n§age§\n",
    ),
    (
        "square-rb",
        "client = Square::Client.new(access_token: '§square§', environment: 'production')\n",
    ),
    ("dropbox-swift", 'let client = DropboxClient(accessToken: "§dropbox§")\n'),
    ("dynatrace-helm", "oneagent:\n  apiToken: §dynatrace§\n"),
    ("atlassian-netrc", "machine acme.atlassian.net login ops@acme.io password §atlassian§\n"),
    ("tailscale-compose", "    environment:\n      - TS_AUTHKEY=§tailscale§\n"),
    ("fb-graph-curl", 'curl "https://graph.facebook.com/v19.0/me?access_token=§fb§"\n'),
    (
        "azure-storage-conn",
        "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
        "AccountName=acmeprod;AccountKey=§azure_key§;EndpointSuffix=core.windows.net\n",
    ),
    (
        "azure-servicebus",
        '"ServiceBus": "Endpoint=sb://acme.servicebus.windows.net/;'
        'SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=§sas_key§"\n',
    ),
    (
        "azure-sas-url",
        "https://acme.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co"
        "&sp=rl&se=2026-01-01T00:00:00Z&sig=§sas_key§\n",
    ),
    ("laravel-env", "APP_NAME=Acme\nAPP_ENV=production\nAPP_KEY=§laravel§\n"),
    ("otpauth", "otpauth://totp/Acme:ops@acme.io?secret=§otp_b32§&issuer=Acme\n"),
]

# Private keys, in the places they get pasted.
KEYS: list[tuple[str, str]] = [
    ("openssh-key-file", "§ed25519_pem§\n"),
    ("ec-key-in-md", "Here's the key for the bastion:\n\n```\n§ec_pem§\n```\n"),
    (
        "pkcs8-gcp-json",
        '{\n  "type": "service_account",\n  "project_id": "acme-prod",\n'
        '  "private_key": "§pkcs8_json§\\n",\n'
        '  "client_email": "ci@acme-prod.iam.gserviceaccount.com"\n}\n',
    ),
    ("yaml-block-key", "ssh:\n  deploy_key: |\n    §ed25519_pem§\n  host: 10.0.0.4\n"),
    ("tf-heredoc-key", 'resource "tls_x" "k" {\n  private_key = <<EOT\n§ec_pem§\nEOT\n}\n'),
    ("log-prefixed-key", "2024-05-01T10:00:03Z web-1 | §@ec_pem§\n"),
    ("compose-log-key", "web-1  | 2024-05-01T10:00:03.000000000Z §@ec_pem§\n"),
    ("env-quoted-key", 'SSH_PRIVATE_KEY="§pkcs8_pem§"\n'),
]

# Connection strings and URIs.
URIS: list[tuple[str, str]] = [
    ("pg-url-env", "DATABASE_URL=postgres://app:§upw§@db.internal:5432/app\n"),
    ("mysql-url-py", 'SQLALCHEMY_DATABASE_URI = "mysql+pymysql://root:§upw§@127.0.0.1/shop"\n'),
    (
        "mongo-srv",
        'MONGO_URI="mongodb+srv://admin:§upw§@cluster0.ab1cd.mongodb.net/?retryWrites=true"\n',
    ),
    ("redis-url", "CELERY_BROKER_URL=redis://:§upw§@redis:6379/0\n"),
    ("amqp-url", 'amqp_url: "amqp://guest_admin:§upw§@rabbitmq:5672/%2F"\n'),
    ("smtp-url", "EMAIL_URL=smtp://mailer@acme.io:§upw§@smtp.mailgun.org:587\n"),
    (
        "alembic-ini",
        "[alembic]\nscript_location = migrations\n"
        "sqlalchemy.url = postgresql://etl:§upw§@warehouse/etl\n",
    ),
    (
        "jdbc-params",
        "spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password=§upw§\n",
    ),
    (
        "jdbc-sqlserver",
        'url="jdbc:sqlserver://sql01:1433;databaseName=erp;user=sa;password=§pw§;"\n',
    ),
    (
        "dotnet-appsettings",
        '{\n  "ConnectionStrings": {\n    "Default": "Server=sql01;Database=Erp;'
        'User Id=erp_app;Password=§pw§;TrustServerCertificate=True"\n  }\n}\n',
    ),
    (
        "web-config",
        '<connectionStrings>\n  <add name="Main" connectionString="Data Source=.\\SQLEXPRESS;'
        'Initial Catalog=Shop;User ID=shop;Password=§pw§" providerName="System.Data.SqlClient" />\n'
        "</connectionStrings>\n",
    ),
    (
        "odbc-pwd",
        'conn = pyodbc.connect("DRIVER={ODBC Driver 18 for SQL Server};SERVER=sql01;'
        'DATABASE=erp;UID=report;PWD=§pw§")\n',
    ),
    (
        "go-mysql-dsn",
        'db, err := sql.Open("mysql", "app:§upw§@tcp(db:3306)/orders?parseTime=true")\n',
    ),
    ("git-credentials", "https://jdoe:§upw§@bitbucket.org\n"),
    ("pip-conf", "[global]\nindex-url = https://ci:§upw§@nexus.acme.io/repository/pypi/simple\n"),
    (
        "stack-trace-url",
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='x') "
        "url: https://svc:§upw§@api.acme.io/v1/items\n",
    ),
    ("smtp-url-encoded", "EMAIL_URL=smtp://mailer%40acme.io:§upw§@smtp.mailgun.org:587\n"),
    ("ldap-url", "LDAP_URI=ldaps://cn=admin,dc=acme,dc=io:§upw§@ldap.acme.io\n"),
    (
        "docker-config-auth",
        '{\n  "auths": {\n    "registry.acme.io": {\n      "auth": "§basic§"\n    }\n  }\n}\n',
    ),
    ("http-basic", "GET /api/v2/builds HTTP/1.1\nHost: ci.acme.io\nAuthorization: Basic §basic§\n"),
    ("kubeconfig-token", "users:\n- name: ci\n  user:\n    token: §jwt§\n"),
    ("bearer-curl", 'curl -H "Authorization: Bearer §jwt§" https://api.acme.io/v1/me\n'),
    ("har-header", '{"name": "Authorization", "value": "Bearer §alnum40§"},\n'),
    ("cookie-header", "Cookie: _ga=GA1.2.3; sessionid=§alnum32§; csrftoken=abc\n"),
    ("x-api-key", "X-Api-Key: §hex32§\n"),
]
