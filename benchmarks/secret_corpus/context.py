"""Secrets written in context rather than as ``name = value``: command lines, SQL statements,
prose and tickets, macros, typed and compared assignments, markup, a lookup's default; and the
same places holding a variable, a placeholder, a type or a word instead, which are not secrets.

Values are fresh on every run (``corpus._password`` shapes); nothing secret-shaped is stored.
"""

from __future__ import annotations

import string
from collections.abc import Iterator

from benchmarks.secret_corpus.tokens import ALNUM, rand

SHAPES = {
    "cli-flag": "gpg --batch --passphrase {v} --decrypt notes.gpg\n",
    "cli-flag-powershell": "Set-Account -Domain corp -Password '{v}'\n",
    "cli-token-flag": "runner register --url https://ci.example.org --token {v}\n",
    "cli-compound-flag": "agent --super-secret_token {v}\n",
    "curl-user": 'curl -X PUT -u "deploy:{v}" https://api.example.org/v1\n',
    "curl-bearer-flag": "curl --oauth2-bearer '{v}' https://api.example.org\n",
    "curl-header": 'curl -H "X-Tenant-Key: {v}" https://api.example.org\n',
    "sshpass": "sshpass -p {v} ssh deploy@203.0.113.5\n",
    "secure-string": '$pw = ConvertTo-SecureString "{v}" -AsPlainText -Force\n',
    "libcurl": 'curl_easy_setopt(curl, CURLOPT_USERPWD, "svc:{v}");\n',
    "sql-identified": "CREATE USER 'app'@'%' IDENTIFIED BY '{v}';\n",
    "sql-identified-with": "ALTER USER app IDENTIFIED WITH caching_sha2_password BY '{v}';\n",
    "sql-with-password": "CREATE ROLE reader WITH LOGIN PASSWORD '{v}';\n",
    "sql-set-password": "SET PASSWORD FOR 'app'@'localhost' = '{v}';\n",
    "prose-is": "the staging password is {v}\n",
    "prose-parenthesis": "db01.internal (pw:{v})\n",
    "prose-two-words": "Secret Key: {v}\n",
    "macro": '#define ADMIN_PASSWORD "{v}"\n',
    "shortened-name": "DB_PSWD:={v}\n",
    "java-typed": 'private static final String dbPassword = "{v}";\n',
    "rust-typed": 'let token: &str = "{v}";\n',
    "comparison": 'if passwd == "{v}":\n',
    "markup-attributes": '<password name="db">{v}</password>\n',
    "markup-own-line": "<Password>\n    {v}\n</Password>\n",
    "lookup-default": 'PASSWORD = os.environ.get("DB_PASS") or "{v}"\n',
    "getenv-default": 'if secret := getenv("APP_SECRET", "{v}"):\n',
    "salt": 'salt = "{v}"\n',
}

LOOK_ALIKES = {
    "cli-variable": 'gpg --batch --passphrase "$GPG_PASSPHRASE" --decrypt notes.gpg\n',
    "cli-placeholder": "runner register --token <token>\n",
    "cli-usage": "  --token TOKEN         The token to use\n",
    "cli-stdin": "docker login --password-stdin registry.example.org\n",
    "curl-variables": 'curl -u "$USER:$TOKEN" https://api.example.org\n',
    "secure-string-variable": "$pw = ConvertTo-SecureString $plain -AsPlainText -Force\n",
    "libcurl-variable": "curl_easy_setopt(curl, CURLOPT_PASSWORD, password);\n",
    "sql-bind": "CREATE USER app IDENTIFIED BY :password;\n",
    "sql-hash": "ALTER USER u IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1';\n",
    "prose-required": "password: required\ntoken: the token to use\n",
    "prose-word": "the password is the one you chose.\n",
    "macro-number": "#define PASSWORD_MAX 64\n",
    "typed-call": "String password = getPassword();\n",
    "type-name": "password: Optional[str] = None\n",
    "comparison-empty": 'if password == "":\n',
    "markup-template": "<password>\n  {{ .Values.db.password }}\n</password>\n",
    "lookup-empty-default": 'PASSWORD = os.environ.get("PASSWORD") or ""\n',
    "lookup-placeholder": 'token = os.environ.get("TOKEN", "your-token-here")\n',
    "salt-call": "salt = os.urandom(16)\n",
}


def _password() -> str:
    return rand(4, string.ascii_lowercase) + rand(4, string.digits) + rand(4, ALNUM) + rand(4)


def context_samples() -> Iterator[tuple[str, str, str]]:
    """(shape, text, secret) for each shape, four fresh values each."""
    for shape, template in SHAPES.items():
        for _ in range(4):
            value = _password()
            yield shape, template.format(v=value), value


def look_alikes() -> Iterator[tuple[str, str]]:
    yield from LOOK_ALIKES.items()
