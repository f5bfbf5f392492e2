"""Passwords in shapes of code and configuration that name them without an assignment of their
own: an argument whose place in a well-known call's signature makes it the password, a generated
value that happens to hold what a format field or a reference starts with, an unquoted password
of letters alone, names in other spellings and languages, Markdown tables and bullets. Each with
the look-alikes that must stay served: variables, format strings, templates, identifiers."""

from __future__ import annotations

import pytest

from safeport.shared.secret_scan import find_secrets, redact

PW = "Vq7#mZr2Lk"


def withheld(text: str, value: str) -> None:
    assert value in text
    redacted, findings = redact(text)
    assert findings, text
    assert value not in redacted, redacted


def served(text: str) -> None:
    assert find_secrets(text) == [], text


@pytest.mark.parametrize(
    "template",
    [
        'r = requests.get(url, auth=("admin", "{pw}"))',
        "r = httpx.post(url, json=body, auth = ('admin', '{pw}'))",
        'session.auth = HTTPBasicAuth("svc-reader", "{pw}")',
        'a = HTTPDigestAuth("ops", "{pw}")',
        'auth = aiohttp.BasicAuth("ops", "{pw}")',
        'server = smtplib.SMTP_SSL("smtp.mail.test", 465)\nserver.login("me@mail.test", "{pw}")',
        "ftp = ftplib.FTP('files.test'); ftp.login('upload', '{pw}')",
        'imap.login("inbox@mail.test", "{pw}")',
        'Connection c = DriverManager.getConnection(jdbcUrl, "sa", "{pw}");',
        'Connection c = dataSource.getConnection("report", "{pw}");',
        "$pdo = new PDO($dsn, 'root', '{pw}');",
        '$pdo = new PDO("mysql:host=db;dbname=shop", "shop", "{pw}", $options);',
        "$db = new mysqli('localhost', 'shop', '{pw}', 'shop');",
        '$link = mysqli_connect("db", "shop", "{pw}", "shop", 3306);',
        'ldap_bind($conn, "cn=admin,dc=corp", "{pw}");',
        'var cred = new NetworkCredential("svc_backup", "{pw}");',
        'var cred = new NetworkCredential("svc_backup", @"{pw}", "CORP");',
        "creds = pika.PlainCredentials('app', '{pw}')",
        'new UsernamePasswordCredentials("jenkins", "{pw}")',
        'return new PasswordAuthentication("mailer", "{pw}".toCharArray());',
        'req.SetBasicAuth("deploy", "{pw}")',
        'auth := smtp.PlainAuth("", "noreply@mail.test", "{pw}", "smtp.mail.test")',
        "const db = new Sequelize('shop', 'shop', '{pw}', {{ dialect: 'postgres' }});",
        "conn.simple_bind_s('cn=admin,dc=corp', '{pw}')",
    ],
)
def test_password_by_position_is_withheld(template: str) -> None:
    withheld(template.format(pw=PW), PW)


@pytest.mark.parametrize(
    "text",
    [
        "r = requests.get(url, auth=(user, password))",
        'r = requests.get(url, auth=("admin", os.environ["PW"]))',
        "server.login(user, password)",
        'server.login("me@mail.test", getpass.getpass())',
        'server.login("me@mail.test", "<password>")',
        "Connection c = DriverManager.getConnection(url, user, pass);",
        'Connection c = DriverManager.getConnection(url, "sa", "");',
        "$pdo = new PDO($dsn, $user, $pass);",
        "$pdo = new PDO($dsn, 'root', 'changeme');",
        'var cred = new NetworkCredential(user, Environment.GetEnvironmentVariable("PW"));',
        "creds = pika.PlainCredentials('guest', 'guest')",
        'page.login("username", "password")',
        'form.login("Sign in", "Welcome back")',
        "assert login(client, token)",
    ],
)
def test_positional_look_alikes_stay_served(text: str) -> None:
    served(text)


@pytest.mark.parametrize(
    "value",
    [
        "Xk%s9mQ2vLpR",
        "Xk%d4mQ2vLpR",
        "%r7Xk9mQ2vLp",
        "@Ab3kLmn9PqRs2",
        "*Ab3kLmn9PqRs2",
        "&Ab3kLmn9PqRs2",
    ],
)
@pytest.mark.parametrize(
    "template",
    [
        "database:\n  password: '{value}'\n",
        "MYSQL_PASSWORD={value}\n",
        "db.password={value}\n",
        'SECRET_KEY = "{value}"\n',
    ],
)
def test_generated_value_holding_a_format_mark_is_withheld(template: str, value: str) -> None:
    withheld(template.format(value=value), value)


@pytest.mark.parametrize(
    "value",
    [
        "k3j()x9%d&*a@zz+4q!w-_=ab7c8d9e0f1g2h3i4j5k6l7m8n9",
        "*(f8%s3k-@q!w2=z+e9^r)t7y6u5i4o3p2a1s0d9f8g7h6j5k4",
        "@t$w()8%r&k+1x!c^b=2n-7m_j#9h(q)v5g*4f3d6s0a8p7o1",
    ],
)
@pytest.mark.parametrize(
    "template",
    ["SECRET_KEY = '{value}'\n", 'SECRET_KEY = "{value}"\n', "secret_key: '{value}'\n"],
)
def test_django_key_holding_calls_and_fields_is_withheld(template: str, value: str) -> None:
    withheld(template.format(value=value), value)


@pytest.mark.parametrize(
    "value",
    [
        "%s",
        "%(db_password)s",
        "{0}",
        "{password}",
        "${DB_PASSWORD}",
        "$DB_PASSWORD",
        "@DB_PASSWORD@",
        "@db_password",
        "&default_password",
        "*default_password",
        "token_%s_suffix",
        "%s:%s",
        "get_password()",
        "settings.secret()",
        "{{ password }}",
        "&quot;",
    ],
)
@pytest.mark.parametrize(
    "template",
    ["database:\n  password: {value}\n", 'DB_PASSWORD = "{value}"\n', "db.password={value}\n"],
)
def test_format_fields_and_references_stay_served(template: str, value: str) -> None:
    served(template.format(value=value))


@pytest.mark.parametrize(
    "value", ["xkQvTrbLmPwaZe", "GhtRwqLmnZxvBs", "pQrS.tUvWxYz!aBcD", "mNbV#cXzLkJhGfDs"]
)
@pytest.mark.parametrize(
    "template",
    [
        "DB_PASSWORD={value}\n",
        "redis:\n  password: {value}\n",
        "export SMTP_PASSWD={value}\n",
        "mail.pwd={value}\n",
        "SECRET_KEY={value}\n",
        "oauth:\n  client_secret: {value}\n",
        "API_SECRET={value}\n",
        "[vault]\npassphrase = {value}\n",
    ],
)
def test_unquoted_letters_only_password_under_a_strong_name_is_withheld(
    template: str, value: str
) -> None:
    withheld(template.format(value=value), value)


@pytest.mark.parametrize(
    "text",
    [
        "password = getPasswordFromVault",
        "password: HTTPServerError\n",
        "password = DEFAULT_ADMIN_PASSWORD",
        "DB_PASSWORD=ChangeMeBeforeDeploy\n",
        "password: YourPasswordHere\n",
        "password: correcthorsebatterystaple\n",
        "password: CORRECTHORSEBATTERY\n",
        "session_secret_name=QwErTyUiOpAsDfGh\n",
        "password: xkQvTrb\n",
    ],
)
def test_unquoted_letters_look_alikes_stay_served(text: str) -> None:
    served(text)


@pytest.mark.parametrize(
    "identifier",
    ["SuperSecretAdminPass", "getPasswordFromVault", "ServerErrorHandler", "ReadTimeoutError"],
)
def test_unquoted_identifier_under_a_password_name_stays_served(identifier: str) -> None:
    served(f"password = {identifier}\n")
    served(f"DB_PASSWORD={identifier}\n")


@pytest.mark.parametrize(
    "template",
    [
        'mot_de_passe = "{pw}"\n',
        "motDePasse: {pw}\n",
        "MOTDEPASSE={pw}\n",
        'haslo = "{pw}"\n',
        "heslo: {pw}\n",
        "sifre={pw}\n",
        "losenord = '{pw}'\n",
        "passord: {pw}\n",
        "salasana={pw}\n",
        'jelszo = "{pw}"\n',
        "export GITHUB_PAT={pw}Qa8\n",
        "AZURE_DEVOPS_EXT_PAT={pw}Qa8\n",
        "    release {{\n        storePassword '{pw}'\n    }}\n",
        '        keyPassword "{pw}"\n',
        "credentials {{\n    username 'deploy'\n    password '{pw}'\n}}\n",
        'NSString *password = @"{pw}";\n',
        'static NSString * const kDbPassword = @"{pw}";\n',
        'PASSWORD="${{DB_PASSWORD:-{pw}}}"\n',
        'export DB_PASS="${{DB_PASS:={pw}}}"\n',
        "PASSWORD=${{DB_PASSWORD:-{pw}}}\n",
        "  POSTGRES_PASSWORD: ${{POSTGRES_PASSWORD-{pw}}}\n",
    ],
)
def test_names_in_other_spellings_and_shapes_are_withheld(template: str) -> None:
    withheld(template.format(pw=PW), PW)


@pytest.mark.parametrize(
    "text",
    [
        'URL_PATH="/srv/app/static/assets"\n',
        "pat = re.compile(r'[a-z]+')\n",
        "    storePassword System.getenv('KEYSTORE_PASSWORD')\n",
        "    storePassword keystoreProperties['storePassword']\n",
        "    keyPassword signingPassword\n",
        'NSString *password = @"%@";\n',
        'NSLog(@"Password: %@", password);\n',
        'PASSWORD="${DB_PASSWORD:-changeme}"\n',
        'PASSWORD="${DB_PASSWORD:-$FALLBACK_PASSWORD}"\n',
        'PASSWORD="${DB_PASSWORD}"\n',
        'PASSWORD="${DB_PASSWORD:?set DB_PASSWORD}"\n',
        'echo "the password is required"\n',
    ],
)
def test_spelling_look_alikes_stay_served(text: str) -> None:
    served(text)


@pytest.mark.parametrize(
    "template",
    [
        "| env | user | password |\n|-----|------|----------|\n| prod | root | {pw} |\n",
        "| Host | Login | Password | Notes |\n| :--- | :---: | --- | --- |\n"
        "| db1 | app | `{pw}` | rotated monthly |\n",
        "|user|pass|\n|---|---|\n|admin|{pw}|\n",
        "| Service | API Token |\n|---|---|\n| billing | {pw}Qa8ZxLmP0 |\n",
        "- **Username:** deploy\n- **Password:** {pw}\n",
        "* Password: {pw}\n",
        "- **Password**: {pw}\n",
        "- __Password:__ {pw}\n",
        "  - Password: `{pw}`\n",
    ],
)
def test_markdown_table_and_bullet_passwords_are_withheld(template: str) -> None:
    withheld(template.format(pw=PW), PW)


@pytest.mark.parametrize(
    "text",
    [
        "| Name | Description |\n|---|---|\n| password | The password of the user |\n",
        "| user | password |\n| --- | --- |\n| admin | <set in vault> |\n"
        "| ops | ${OPS_PASSWORD} |\n",
        "| user | password |\n| --- | --- |\n| admin | ******** |\n| guest | (none) |\n",
        "| Option | Default |\n|---|---|\n| `--password` | `None` |\n",
        "| a | password |\n| b | Xk9mQ2vL#p7 |\n",
        "- **Password:** see the vault\n",
        "- **Password:** {{ password }}\n",
        "password: *default_pw\n",
        "x = a ** b\npassword ** 2\n",
    ],
)
def test_markdown_look_alikes_stay_served(text: str) -> None:
    served(text)
