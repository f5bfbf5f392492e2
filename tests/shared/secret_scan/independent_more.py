"""More positive cases of the independent set: further providers, lookups with a literal default,
credential files of common tools, and languages the other modules do not cover."""

from __future__ import annotations

MORE_PROVIDERS: list[tuple[str, str]] = [
    ("azure-ad-secret", "AZURE_CLIENT_ID=0f3c\nAZURE_CLIENT_SECRET=§azure_ad§\n"),
    ("azure-devops-pat", "export AZURE_DEVOPS_EXT_PAT=§azure_devops§\n"),
    ("digitalocean", 'do_token = "§dop§"\n'),
    ("sentry-user", "SENTRY_AUTH_TOKEN=§sntryu§\n"),
    ("bitbucket-app-pw", "BITBUCKET_APP_PASSWORD=§bitbucket§\n"),
    ("okta-ssws", "Authorization: SSWS §okta§\n"),
    ("planetscale", "PLANETSCALE_SERVICE_TOKEN=§pscale§\n"),
    ("langsmith", 'os.environ["LANGCHAIN_API_KEY"] = "§langsmith§"\n'),
    (
        "openrouter",
        'client = OpenAI(base_url="https://openrouter.ai/api/v1", api_key="§openrouter§")\n',
    ),
    ("perplexity", "PERPLEXITY_API_KEY=§pplx§\n"),
    ("xai", "XAI_API_KEY=§xai§\n"),
    ("brevo", "SENDINBLUE_KEY: §brevo§\n"),
    ("mapbox-secret", "MAPBOX_DOWNLOADS_TOKEN=§mapbox§\n"),
    ("sonar", "sonar.token=§sonar§\n"),
    ("nuget-push", "dotnet nuget push pkg.nupkg --api-key §nuget§ --source nuget.org\n"),
    ("rubygems-creds", "---\n:rubygems_api_key: §rubygems§\n"),
    ("cargo-creds", '[registry]\ntoken = "§crates§"\n'),
    ("netlify", "NETLIFY_AUTH_TOKEN=§netlify§\n"),
    ("contentful", "CONTENTFUL_MANAGEMENT_TOKEN=§contentful§\n"),
    ("buildkite", "BUILDKITE_API_TOKEN=§buildkite§\n"),
    ("mailchimp", "MAILCHIMP_API_KEY=§mailchimp§\n"),
    ("fcm-server-key", 'headers: { Authorization: "key=§fcm§" }\n'),
    ("elevenlabs", 'ELEVENLABS_API_KEY = "§elevenlabs§"\n'),
    (
        "jfrog-apikey",
        "curl -H 'X-JFrog-Art-Api: §jfrog§' https://acme.jfrog.io/artifactory/api/repos\n",
    ),
    ("jenkins-token", "JENKINS_API_TOKEN=§jenkins§\n"),
    ("twilio-auth", "TWILIO_ACCOUNT_SID=AC00\nTWILIO_AUTH_TOKEN=§hex32§\n"),
    ("wandb", "wandb login §hex40§\n"),
    ("vercel", "VERCEL_TOKEN=§alnum24§\n"),
    ("mistral", 'client = Mistral(api_key="§alnum32§")\n'),
    ("algolia-admin", "ALGOLIA_ADMIN_API_KEY=§hex32§\n"),
    (
        "gitlab-private-token",
        'curl --header "PRIVATE-TOKEN: §glpat§" https://gitlab.acme.io/api/v4/projects\n',
    ),
    ("query-api-key", "GET https://api.weather.io/v1/forecast?q=Oslo&api_key=§hex32§\n"),
    ("query-access-token", "https://api.acme.io/export?format=csv&access_token=§alnum40§\n"),
]

DEFAULTS: list[tuple[str, str]] = [
    ("py-getenv-default", 'DB_PASSWORD = os.getenv("DB_PASSWORD", "§pw§")\n'),
    ("py-environ-set", 'os.environ["OPENAI_API_KEY"] = "§openai_old§"\n'),
    ("py-setdefault", 'os.environ.setdefault("API_TOKEN", "§alnum40§")\n'),
    ("js-or-default", "const secret = process.env.JWT_SECRET || '§alnum32§';\n"),
    ("ruby-fetch-default", "SECRET = ENV.fetch('SESSION_SECRET', '§hex64§')\n"),
    ("bash-default", 'PASSWORD="${DB_PASSWORD:-§pw§}"\n'),
    ("compose-default", "      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-§pw§}\n"),
    ("spring-default", "spring.datasource.password=${DB_PASSWORD:§pw§}\n"),
    ("r-setenv", 'Sys.setenv(OPENAI_API_KEY = "§openai_old§")\n'),
]

TOOL_FILES: list[tuple[str, str]] = [
    ("pgpass", "db.internal:5432:*:app:§upw§\n"),
    ("my-cnf", "[client]\nuser=root\npassword=§pw§\n"),
    ("wpa-supplicant", 'network={\n    ssid="acme-office"\n    psk="§pw§"\n}\n'),
    ("smb-credentials", "username=backup\npassword=§pw§\ndomain=ACME\n"),
    ("gradle-props", "signing.keyId=24875D73\nsigning.password=§pw§\n"),
    (
        "android-signing",
        "    release {\n        storeFile file('release.jks')\n"
        "        storePassword '§pw§'\n    }\n",
    ),
    ("ios-plist", "<key>APISecret</key>\n<string>§alnum40§</string>\n"),
    ("xcconfig", "API_SECRET = §alnum32§\n"),
    ("s3cfg", "[default]\naccess_key = AKIAIOSFODNN7EXAMPLE\nsecret_key = §aws_secret§\n"),
    ("http-proxy", "export https_proxy=http://jdoe:§upw§@proxy.acme.io:3128\n"),
    ("tfstate", '        "attributes": {\n          "password": "§pw§",\n          "port": 5432\n'),
    ("configmap", 'kind: ConfigMap\ndata:\n  DB_PASSWORD: "§pw§"\n'),
    ("helm-set-string", "helm install api ./chart --set-string secrets.apiKey=§alnum32§\n"),
    ("rails-token-header", 'Authorization: Token token="§hex32§"\n'),
    ("proxy-auth", "Proxy-Authorization: Basic §basic§\n"),
    ("x-auth-token", "X-Auth-Token: §alnum40§\n"),
    (
        "aws-configure",
        "AWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\n"
        "AWS Secret Access Key [None]: §aws_secret§\n",
    ),
]

LANGUAGES: list[tuple[str, str]] = [
    ("elixir", 'config :app, App.Repo,\n  username: "app",\n  password: "§pw§"\n'),
    ("perl", "my $password = '§pw§';\n"),
    ("lua", 'local api_key = "§alnum32§"\n'),
    ("dart", "const apiKey = '§alnum32§';\n"),
    ("objc", 'NSString *apiSecret = @"§alnum40§";\n'),
    ("scala", 'val dbPassword = "§pw§"\n'),
    (
        "cs-sqlconnection",
        'using var conn = new SqlConnection("Server=sql01;Database=Shop;'
        'User Id=shop;Password=§pw§;");\n',
    ),
    (
        "mysql-connector",
        'db = mysql.connector.connect(host="localhost", user="root", passwd="§pw§")\n',
    ),
    ("redis-py", "r = redis.Redis(host='cache', port=6379, password='§pw§')\n"),
    (
        "mongo-client",
        'client = MongoClient("mongodb://admin:§upw§@mongo:27017/?authSource=admin")\n',
    ),
    ("pika-creds", "creds = pika.PlainCredentials('app', '§pw§')\n"),
    ("aws-java-creds", 'new BasicAWSCredentials("AKIAIOSFODNN7EXAMPLE", "§aws_secret§");\n'),
    (
        "traceback-locals",
        '  File "app/db.py", line 12, in connect\n'
        "    conn = psycopg2.connect(dsn, password='§pw§')\n",
    ),
    (
        "chat-stripe",
        "hey can you try with this one `§stripe_sk§` and tell me if the webhook fires\n",
    ),
]
