"""Passwords and secrets written in context, in the ways people write them besides ``name =
value``: prose and tickets, names of two words, shortened spellings, macros and shell built-ins,
typed and compound assignments of many languages, comparisons, markup with attributes or the
value on its own line, a lookup's literal default, salts and nonces, headers whose name ends in
Key. Each is found with its exact span; placeholders, lookups, expressions, type names and
ordinary words in the same places read unchanged."""

from __future__ import annotations

import secrets
import time

import pytest

from safeport.shared.secret_scan import find_secrets
from safeport.shared.secret_scan.checks import is_placeholder
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


@pytest.mark.parametrize(
    "template",
    [
        "db01 (pw:{value})\n",
        "ssh ops@203.0.113.7 (password:{value})\n",
        "ID:admin,PW:{value}\n",
        "the new password is {value}.\n",
        "Wi-Fi passwd is {value}\n",
        "token was {value}\n",
        "SECRET KEY:{value}\n",
        "Secret Key: {value}\n",
        "access key:{value}\n",
        "Authentication key:{value}\n",
        "API Key = {value}\n",
        "client secret: {value}\n",
    ],
)
def test_prose_docs_and_tickets(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "password: required\n",
        "token: the token to use\n",
        "password is required\n",
        "the token is optional\n",
        "password is the one you chose.\n",
        "The secret key: see the vault\n",
        "SECRET KEY: ${SECRET_KEY}\n",
        "access key: <your access key>\n",
        "the password is hunter.\n",
        "password is self.password\n",
        "password is getpass()\n",
        "the password is argon2id-hashed before storage\n",
        "the token is base64-encoded\n",
        "the secret was sha256-derived.\n",
    ],
)
def test_prose_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        "PSWD:={value}\n",
        "DB_PSSWD={value}\n",
        "admin_pasword: {value}\n",
        "X3_PSWRD={value}\n",
        "Passwort: {value}\n",
        "MYSQLPASS: {value}\n",
        "password2 = '{value}'\n",
        "TOKEN_2={value}\n",
        "passwords: {value}\n",
    ],
)
def test_shortened_and_numbered_spellings(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "bypass: 1a2b3c4d5e6f\n",
        "compass = 'N52E013'\n",
        '"auth0": "types-auth0-python",\n',
        "PSWD_MIN_LENGTH := 12\n",
        "pswd = input()\n",
    ],
)
def test_spelling_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '#define PASSWORD "{value}"\n',
        '#  define ADMIN_PWD "{value}"\n',
        "%define token {value}\n",
        '%global PASSWORD "{value}"\n',
        'SET password "{value}"\n',
        "setx API_TOKEN {value}\n",
        "set PASSWORD={value}\n",
        "PASS ::= {value}\n",
        "TOKEN ?= {value}\n",
        "export GH_TOKEN={value}\n",
        '$env:DEPLOY_TOKEN = "{value}"\n',
        "ENV DB_PASSWORD {value}\n",
        '(setq smtp-password "{value}")\n',
        '(def api-token "{value}")\n',
        '{{:user "ops" :password "{value}"}}\n',
    ],
)
def test_macros_and_shell_built_ins(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "#define PASSWORD_MAX 64\n",
        '#define PASSWORD "changeme"\n',
        "%define token %{getenv:TOKEN}\n",
        "set password %1\n",
        "TOKEN ?= $(shell cat token.txt)\n",
        "$env:TOKEN = $secret\n",
        "export TOKEN=$(vault read -field=token kv/app)\n",
        "ENV DB_PASSWORD_FILE /run/secrets/db\n",
        '(setq password (read-passwd "Password: "))\n',
        '{:password "changeme"}\n',
        '{:password (System/getenv "PW")}\n',
    ],
)
def test_macro_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        'String password = "{value}";\n',
        'private static final String API_TOKEN = "{value}";\n',
        'var pwd := "{value}"\n',
        'let token: &str = "{value}";\n',
        'let secret: &\'static str = "{value}";\n',
        'val clientSecret: String = "{value}"\n',
        'local pwd = "{value}"\n',
        'token += "{value}"\n',
        '"password" => "{value}",\n',
        ":password => '{value}',\n",
        "password: '{value}'\n",
        'def connect(host, password="{value}"):\n',
        'def connect(password: str="{value}"):\n',
        'if passwd == "{value}":\n',
        'if (token !== "{value}") {{\n',
        'password <- "{value}"\n',
    ],
)
def test_typed_compound_and_compared_assignments(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "String password = getPassword();\n",
        "let token: &str = &args[1];\n",
        'var pwd := os.Getenv("PWD")\n',
        "token: str\n",
        "password: Optional[str] = None\n",
        "def connect(password: str = None):\n",
        'def connect(password=None, token=""):\n',
        'if password == "":\n',
        "if token != None:\n",
        "token += chunk\n",
        "pw += c\n",
        'password <- readline("Password: ")\n',
        "private_key: Ed25519PrivateKey,\n",
    ],
)
def test_typed_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '<password name="db">{value}</password>\n',
        "<Password>\n    {value}\n</Password>\n",
        '  <token type="bot">\n    {value}\n  </token>\n',
        "<ApiKey>{value}</ApiKey>\n",
    ],
)
def test_markup_elements(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "text",
    [
        '<password name="db">${DB_PASSWORD}</password>\n',
        "<password>\n  changeme\n</password>\n",
        '<token name="token" comment="a comment"/>\n',
        "<password>\n  {{ .Values.db.password }}\n</password>\n",
        '<password required="true">\n  <min>12</min>\n</password>\n',
    ],
)
def test_markup_look_alikes_read_unchanged(text: str) -> None:
    assert_clean(text)


@pytest.mark.parametrize(
    "template",
    [
        'PASSWORD = os.environ.get("DB_PASS") or "{value}"\n',
        'if SECRET := getenv("APP_SECRET", "{value}"):\n',
        'token = config.get("auth.token", default="{value}")\n',
        'const apiKey = process.env.API_KEY || "{value}";\n',
        'password = settings.get("db_pw", "{value}")\n',
        'api_token = ENV.fetch("API_TOKEN", "{value}")\n',
    ],
)
def test_a_lookups_literal_default(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        'PASSWORD = os.environ.get("PASSWORD") or ""\n',
        'SECRET = getenv("SECRET", "dev")\n',
        'token = config.get("token", default=None)\n',
        'token = os.environ.get("TOKEN", "your-token-here")\n',
        'const apiKey = process.env.API_KEY || "";\n',
        'password = form.get("password", "")\n',
        'token = tokens.get(user) or "anonymous"\n',
    ],
)
def test_lookup_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        'salt = "{value}"\n',
        'SALT: "{value}"\n',
        'nonce = b"{value}"\n',
        '{{"client_nonce": "{value}"}}\n',
        '-H "X-Service-Key: {value}"\n',
        "x-tenant-key: {value}\n",
        "Authorization: NTLM {value}\n",
    ],
)
def test_salts_nonces_and_headers(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "salt = os.urandom(16)\n",
        "nonce = secrets.token_hex(16)\n",
        'salt: "{{ .Values.salt }}"\n',
        "X-Service-Key: ${SERVICE_KEY}\n",
        "ssh-key: ~/.ssh/id_ed25519\n",
        "nonce_size = 12\n",
    ],
)
def test_salt_nonce_and_header_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


def test_a_long_line_of_context_near_misses_scans_in_linear_time() -> None:
    line = (
        ("password is " * 20_000)
        + ("<password " * 20_000)
        + ("token = getenv(" * 10_000)
        + ("#define PASSWORD " * 10_000)
        + ("access key " * 10_000)
    )
    started = time.process_time()
    assert find_secrets(line) == []
    assert time.process_time() - started < 3.0


def test_every_context_shape_of_the_corpus_is_withheld_and_its_look_alikes_are_not() -> None:
    """Each shape is found in nearly every draw (a generated value is now and then too plain to
    be judged random, as for the generic shapes), and every look-alike reads unchanged."""
    from collections import Counter

    from benchmarks.secret_corpus.corpus import context_samples
    from safeport.shared.secret_scan import redact

    withheld: Counter[str] = Counter()
    for sample in [*context_samples(), *context_samples()]:  # 8 fresh values a shape
        served, _ = redact(sample.text)
        if sample.secret is None:
            assert served == sample.text, sample.category
        else:
            withheld[sample.category] += sample.secret not in served
    assert {shape: count for shape, count in withheld.items() if count < 6} == {}


def long_fresh() -> str:
    """A generated key's length: 32 random characters of base64url, the last a digit."""
    while True:
        body = secrets.token_urlsafe(24).replace("-", "q").replace("_", "V")
        value = body[:31] + str(secrets.randbelow(10))  # a digit, as unquoted values need
        if not is_placeholder(value):
            return value


@pytest.mark.parametrize(
    "template",
    [
        "$key = '{value}';\n",
        'KEY = "{value}"\n',
        'gateway_api = "{value}"\n',
        '"kerberos_authentication": "{value}",\n',
        "SIGNING_SEED={value}\n",
        'pkey = "{value}"\n',
        '<script src="https://maps.example.org/js?key={value}&callback=init"></script>\n',
    ],
)
def test_weak_names_take_a_strongly_random_value(template: str) -> None:
    value = long_fresh()
    text = template.format(value=value)
    at = text.index(value)
    assert [(span.start, span.end) for span in find_secrets(text)] == [(at, at + len(value))]


@pytest.mark.parametrize(
    "line",
    [
        'key = "user_profile_v2"\n',
        'key = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n',
        'cache_key = "2c1743a391305fbf367df8e4f069f9f9"\n',
        'request_key = "7d8e2a40-8c1b-4b7e-9f0e-3f6a1c2d9b11"\n',
        "items.sort(key=lambda item: item.created_at)\n",
        'api = "https://api.example.org/v1/resources"\n',
        'key = "tag:yaml.org,2002:str"\n',
        'KEY = "Content-Security-Policy-Report-Only"\n',
        "seed = 42\n",
        'api_version = "2024-01-01"\n',
        'key = "Qx7"  # short\n',
        'keyword = "aB3dE6gH9jK2mN5pQ8sT1vW4"\n',
        'key = self.keys.get("primary")\n',
    ],
)
def test_weak_name_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '    placeholder="Your password: &quot;{value}&quot;"\n',
        '<a href="https://example.org/login?token=&quot;{value}&quot;">sign in</a>\n',
        "GET /v1/items?access_token={value}&page=2\n",
    ],
)
def test_html_escaped_quotes_and_query_parameters(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        'value="password: &quot;&quot;"\n',
        'title="token: &quot;${API_TOKEN}&quot;"\n',
        "GET /v1/items?access_token=&page=2\n",
    ],
)
def test_html_and_query_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        'dataSource.setPassword("{value}");\n',
        "client = Client.builder().withApiKey('{value}').build()\n",
        'cfg.token("{value}")\n',
        'conn.set_password("{value}")\n',
    ],
)
def test_a_setter_or_builder_given_a_literal(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "dataSource.setPassword(password);\n",
        'user.check_password("Zq8xK2mW9pL4vT7a")\n',
        'vault.get_secret("prod/db/password-2024")\n',
        'if final_token.startswith("prefix-2024-"):\n',
        'form.setPassword("")\n',
        'cfg.token("<token>")\n',
    ],
)
def test_setter_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        "пароль: {value}\n",
        "Пароль = {value}\n",
        "密码\uff1a{value}\n",
        "비번:{value}\n",
        "パスワード\uff1a{value}\n",
        "contraseña: {value}\n",
        "Kennwort: {value}\n",
        "senha={value}\n",
        "password for master:{value}\n",
        "token for the deploy bot = {value}\n",
    ],
)
def test_other_languages_and_whose_secret_it_is(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "пароль: обязательно\n",
        "密码\uff1a请输入密码\n",
        "password for the account: see the vault\n",
        "token for each request = per_request_token()\n",
        "Kennwort: ${KENNWORT}\n",
    ],
)
def test_language_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


def test_words_in_other_scripts_leave_every_ascii_anchor_where_it_was() -> None:
    """ASCII text goes to an automaton of the ASCII literals alone, whose indexes must be the
    full list's: a literal in another script placed among them would shift every one after."""
    from safeport.shared.secret_scan.prefilter import ANCHORS, LITERALS, hits

    assert any(not literal.isascii() for literal in LITERALS)
    for index, literal in enumerate(LITERALS):
        if not literal.isascii():
            assert all(not later.isascii() for later in LITERALS[index:])
            break
        text = f" {literal} "
        woken = [anchor for start, end, anchor in hits(text) if text[start:end] == literal]
        assert ANCHORS[index] in woken, literal
