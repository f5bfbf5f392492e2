"""Positive cases of the independent set whose secret is known only by its context: passwords
and keys assigned, passed on command lines, written in prose, SQL, markup and other languages."""

from __future__ import annotations

CONFIGS: list[tuple[str, str]] = [
    ("dotenv-db", "DB_HOST=localhost\nDB_USER=app\nDB_PASSWORD=§pw§\n"),
    ("dotenv-quoted", 'JWT_SECRET="§alnum40§"\n'),
    ("dotenv-human", "ADMIN_PASSWORD=§hpw§\n"),
    ("dotenv-session", "SESSION_SECRET=§hex64§\n"),
    (
        "compose-list",
        "services:\n  db:\n    image: postgres:16\n    environment:\n"
        "      - POSTGRES_PASSWORD=§pw§\n",
    ),
    ("compose-map", "  mysql:\n    environment:\n      MYSQL_ROOT_PASSWORD: §hpw§\n"),
    ("dockerfile-env", "FROM node:20\nENV NPM_TOKEN=§alnum40§\nRUN npm ci\n"),
    ("dockerfile-arg", "ARG DB_PASS=§pw§\n"),
    ("helm-values", 'postgresql:\n  auth:\n    username: app\n    password: "§pw§"\n'),
    ("helm-redis", "redis:\n  auth:\n    enabled: true\n    password: §hpw§\n"),
    ("ansible-vars", "ansible_user: deploy\nansible_become_pass: §pw§\n"),
    ("ansible-inventory", "[web]\n10.0.0.5 ansible_user=root ansible_ssh_pass=§pw§\n"),
    (
        "tf-db",
        'resource "aws_db_instance" "main" {\n  username = "admin"\n  password = "§pw§"\n}\n',
    ),
    ("tfvars", 'db_admin_password = "§hpw§"\n'),
    ("spring-props", "spring.datasource.username=app\nspring.datasource.password=§pw§\n"),
    ("spring-yaml", "spring:\n  datasource:\n    username: app\n    password: §pw§\n"),
    ("java-props-mail", "mail.smtp.user=alerts@acme.io\nmail.smtp.password=§hpw§\n"),
    (
        "keystore-props",
        "server.ssl.key-store=classpath:ks.p12\nserver.ssl.key-store-password=§pw§\n",
    ),
    (
        "maven-settings",
        "<server>\n  <id>nexus</id>\n  <username>ci</username>\n"
        "  <password>§pw§</password>\n</server>\n",
    ),
    (
        "nuget-config",
        '<packageSourceCredentials>\n  <acme>\n    <add key="Username" value="ci" />\n'
        '    <add key="ClearTextPassword" value="§pw§" />\n  </acme>\n'
        "</packageSourceCredentials>\n",
    ),
    ("appsettings-jwt", '  "Jwt": {\n    "Issuer": "acme",\n    "Key": "§alnum40§"\n  },\n'),
    ("rails-secrets", "production:\n  secret_key_base: §hex64§\n"),
    ("django-settings", "SECRET_KEY = '§django§'\n"),
    ("flask-secret", "app.secret_key = '§hex32§'\n"),
    ("wp-config", "define( 'DB_PASSWORD', '§pw§' );\n"),
    ("wp-salt", "define('AUTH_KEY',         '§alnum40§');\n"),
    ("php-array", "return [\n    'host' => 'localhost',\n    'password' => '§pw§',\n];\n"),
    ("ini-section", "[database]\nhost = db01\nuser = report\npasswd = §pw§\n"),
    ("toml-key", '[tool.acme]\napi_key = "§alnum32§"\n'),
    ("json-client-secret", '{"client_id": "web-app", "client_secret": "§urlsafe43§"}\n'),
    ("k8s-stringdata", "apiVersion: v1\nkind: Secret\nstringData:\n  DB_PASSWORD: §pw§\n"),
    ("github-actions-env", "    env:\n      SONAR_TOKEN: §hex40§\n"),
    ("circleci", "      - run: echo 'export API_SECRET=§alnum32§' >> $BASH_ENV\n"),
    ("jenkinsfile", "    environment {\n        DEPLOY_PASSWORD = '§pw§'\n    }\n"),
    ("netrc", "machine api.heroku.com\n  login ops@acme.io\n  password §uuid§\n"),
    ("heroku-env", "HEROKU_API_KEY=§uuid§\n"),
    ("datadog-yaml", "api_key: §hex32§\nsite: datadoghq.eu\n"),
    ("xml-attr", '<datasource user="sa" password="§pw§" url="jdbc:h2:mem:x"/>\n'),
    ("passphrase-yaml", "gpg:\n  passphrase: §hpw§\n"),
    ("german-config", "datenbank:\n  benutzer: app\n  passwort: §pw§\n"),
    ("french-config", 'mot_de_passe = "§pw§"\n'),
    ("spanish-config", "contrasena: §pw§\n"),
]

CODE: list[tuple[str, str]] = [
    ("py-connect", 'conn = psycopg2.connect(host="db", user="app", password="§pw§")\n'),
    ("py-requests-auth", 'r = requests.get(url, auth=("admin", "§pw§"))\n'),
    ("py-smtp-login", 'server.login("alerts@acme.io", "§pw§")\n'),
    ("py-const", 'API_TOKEN = "§alnum40§"\n'),
    ("py-dict", 'HEADERS = {"Authorization": "Token §hex40§"}\n'),
    ("js-config", "module.exports = {\n  db: { user: 'app', password: '§pw§' },\n};\n"),
    ("js-fetch", "fetch(url, { headers: { 'x-api-key': '§alnum32§' } })\n"),
    ("ts-const", "export const API_SECRET = '§urlsafe43§';\n"),
    ("go-const", 'const apiSecret = "§alnum32§"\n'),
    ("go-struct", 'cfg := Config{\n\tUser:     "app",\n\tPassword: "§pw§",\n}\n'),
    ("rust-let", 'let api_token = "§alnum40§";\n'),
    ("kotlin-val", 'private val password = "§pw§"\n'),
    ("swift-let", 'let clientSecret = "§urlsafe43§"\n'),
    ("java-field", 'private static final String DB_PASSWORD = "§pw§";\n'),
    ("java-drivermanager", 'Connection c = DriverManager.getConnection(url, "sa", "§pw§");\n'),
    ("cs-field", 'private const string ApiKey = "§alnum32§";\n'),
    ("cs-networkcred", 'var cred = new NetworkCredential("svc_backup", "§pw§");\n'),
    ("ruby-hash", "config.password = '§pw§'\n"),
    ("php-var", "$dbpass = '§pw§';\n"),
    ("php-pdo", "$pdo = new PDO($dsn, 'root', '§pw§');\n"),
    ("ps-securestring", '$pw = ConvertTo-SecureString "§pw§" -AsPlainText -Force\n'),
    ("ps-var", '$Password = "§hpw§"\n'),
    ("bash-var", 'DB_PASS="§pw§"\nmysql -u root -p"$DB_PASS" shop\n'),
    ("cpp-define", '#define WIFI_PASSWORD "§hpw§"\n'),
    ("arduino", 'const char* password = "§hpw§";\n'),
]

COMMANDS: list[tuple[str, str]] = [
    ("mysql-p", "$ mysql -h db01 -u root -p§pw§ shop\n"),
    ("mysqldump", "mysqldump --user=backup --password=§pw§ --all-databases > all.sql\n"),
    ("pgpassword", "PGPASSWORD=§pw§ psql -h db -U postgres -c 'select 1'\n"),
    ("curl-u", "curl -u admin:§upw§ https://jenkins.acme.io/api/json\n"),
    ("httpie-a", "http -a ci:§upw§ POST https://nexus.acme.io/service/rest/v1/tasks\n"),
    ("wget-password", "wget --user=ci --password=§pw§ https://repo.acme.io/artifact.tgz\n"),
    ("docker-login-p", "docker login -u acme -p §pw§ registry.acme.io\n"),
    ("redis-cli-a", "redis-cli -h cache01 -a §upw§ INFO\n"),
    ("sshpass", "sshpass -p '§pw§' ssh root@10.0.0.7\n"),
    ("sqlcmd", 'sqlcmd -S sql01 -U sa -P §pw§ -Q "SELECT 1"\n'),
    (
        "keytool",
        "keytool -importkeystore -srckeystore a.p12 -srcstorepass §pw§ -destkeystore b.jks\n",
    ),
    ("openssl-pass", "openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:§pw§\n"),
    ("net-use", "net use \\\\fs01\\share /user:ACME\\backup §pw§\n"),
    ("htpasswd-b", "htpasswd -b -c /etc/nginx/.htpasswd admin §pw§\n"),
    ("ldapsearch", "ldapsearch -x -D cn=admin,dc=acme -w §pw§ -b dc=acme\n"),
    ("git-clone-token", "git clone https://§ghp§@github.com/acme/private.git\n"),
    ("gh-auth-heredoc", "echo §ghp§ | gh auth login --with-token\n"),
    ("kubectl-secret", "kubectl create secret generic db --from-literal=password=§pw§\n"),
    ("helm-set", "helm upgrade app ./chart --set postgresql.auth.password=§pw§\n"),
    (
        "az-login",
        "az login --service-principal -u http://ci -p §pw§ --tenant acme.onmicrosoft.com\n",
    ),
    ("vault-write", "vault kv put secret/app db_password=§pw§\n"),
    ("mongosh", 'mongosh "mongodb://db01:27017" --username admin --password §pw§\n'),
]

PROSE: list[tuple[str, str]] = [
    ("ticket-pw", "Hi team, the staging DB password is §pw§ until we rotate it on Friday.\n"),
    ("chat-creds", "[10:42] alice: user: admin / pass: §hpw§\n"),
    ("md-table", "| env | user | password |\n|-----|------|----------|\n| prod | root | §pw§ |\n"),
    ("md-bullets", "- **Username:** deploy\n- **Password:** §pw§\n"),
    ("readme-token", "Export the token first:\n\n    export API_TOKEN=§alnum40§\n"),
    ("log-line", "2024-06-01 12:00:01 INFO auth: login ok user=svc password=§pw§\n"),
    ("log-json", '{"level":"debug","msg":"connecting","dsn":"user=app password=§pw§ host=db"}\n'),
    ("exception", "ValueError: invalid credentials {'username': 'ops', 'password': '§pw§'}\n"),
    ("email-paste", "Your new VPN credentials:\nLogin: j.doe\nPassword: §hpw§\n"),
    ("wifi-sign", "Guest Wi-Fi\nSSID: Acme-Guest\nPassword: §hpw§\n"),
]

SQL: list[tuple[str, str]] = [
    ("mysql-identified", "CREATE USER 'app'@'%' IDENTIFIED BY '§pw§';\n"),
    ("pg-role", "ALTER ROLE reporting WITH LOGIN PASSWORD '§pw§';\n"),
    ("mssql-login", "CREATE LOGIN etl WITH PASSWORD = '§pw§', CHECK_POLICY = OFF;\n"),
    (
        "sql-insert-key",
        "INSERT INTO `integrations` (`id`, `name`, `api_key`) VALUES\n"
        "(1, 'stripe', '§stripe_sk§');\n",
    ),
    ("sql-update-token", "UPDATE settings SET value = '§alnum40§' WHERE name = 'slack_token';\n"),
    ("oracle-identified", "ALTER USER scott IDENTIFIED BY §upw§;\n"),
]

# Values whose own characters carry a trait the value tests weigh: no digit, a ``%d``, a
# leading mark, words joined by hyphens, a drawn key that begins with ``/``.
TRAITS: list[tuple[str, str]] = [
    ("alpha-pw-dotenv", "SMTP_PASSWORD=§alpha_pw§\n"),
    ("alpha-pw-yaml", "redis:\n  password: §alpha_pw§\n"),
    ("alpha-pw-quoted", 'DB_PASSWORD = "§alpha_pw§"\n'),
    ("pct-pw-yaml", "database:\n  password: '§pct_pw§'\n"),
    ("pct-pw-dotenv", "MYSQL_PASSWORD=§pct_pw§\n"),
    ("at-pw-props", "db.password=§at_pw§\n"),
    ("at-pw-quoted", 'ADMIN_PASSWORD = "§at_pw§"\n'),
    ("passphrase-yaml", "vault:\n  password: §phrase§\n"),
    ("passphrase-quoted", 'KEYSTORE_PASSWORD = "§phrase§"\n'),
    ("aws-secret-slash", "aws_secret_access_key = §aws_secret_slash§\n"),
    ("django-full-charset", "SECRET_KEY = '§django_raw§'\n"),
    ("weak-pw-dotenv", "WIFI_PASSWORD=§weak_pw§\n"),
    ("weak-pw-prose", "Login: admin\nPassword: §weak_pw§\n"),
    ("hf-few-capitals", "HF_TOKEN=§hf_few_capitals§\n"),
]

ENCODED: list[tuple[str, str]] = [
    (
        "k8s-secret-data",
        "apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  password: §b64_pw§\n",
    ),
    ("npmrc-auth", "_auth=§basic§\nemail=ci@acme.io\n"),
    (
        "kubeconfig-client-key",
        "users:\n- name: admin\n  user:\n    client-certificate-data: LS0t\n"
        "    client-key-data: §b64_pem§\n",
    ),
]
