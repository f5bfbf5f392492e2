"""Generic assignments in the shapes configuration and code write them besides ``name = value``:
header names in any capitalisation, short password names, XML ``<add key=… value=…>``, JSON and
Kubernetes name/value pairs, tuples and call arguments, URLs whose password holds an ``@``, and
``mysql -p…``. Each is found with its exact span; its look-alikes read unchanged."""

from __future__ import annotations

import pytest

from safeport.shared.secret_scan import find_secrets
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


@pytest.mark.parametrize(
    "template",
    [
        "X-API-Key: {value}\n",
        "x-api-key: {value}\n",
        "X-Api-key: {value}\n",
        "X-Auth-Token: {value}\n",
        'curl -H "X-API-Key: {value}" https://api.example.net/v1\n',
    ],
)
def test_header_names_in_any_capitalisation(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "X-API-Key: ${API_KEY}\n",
        'x-api-key: "<your api key>"\n',
        "X-API-Key: required\n",
        'headers = {"X-API-Key": api_key}\n',
    ],
)
def test_header_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    ["PW: {value}\n", "pw={value}\n", 'pwd = "{value}"\n', "passwd: {value}\n", "DB_PW={value}\n"],
)
def test_short_password_names(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    ["PW: ${DB_PW}\n", "pw=changeme\n", "pwd = os.getcwd()\n", "passwd: hunter\n", "pw = 0.25\n"],
)
def test_short_name_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgres://user:p@ss0rdX9@db.internal/app", "p@ss0rdX9"),
        ("mongodb://admin:Zq8@x@K2m@mongo:27017/", "Zq8@x@K2m"),
        ("redis://:s3cr@tValue7@cache:6379/0", "s3cr@tValue7"),
    ],
)
def test_url_password_holding_an_at_sign_is_withheld_to_the_last_at(
    url: str, password: str
) -> None:
    text = f'DATABASE_URL = "{url}"\n'
    at = text.index(password)
    assert [(span.start, span.end) for span in find_secrets(text)] == [(at, at + len(password))]


@pytest.mark.parametrize(
    "line",
    [
        "url = 'https://user:${DB_PASSWORD}@db/app'\n",
        "see https://host:8080/path?to=a@b.net\n",
        "pip install git+https://github.com/org/repo@v1.2\n",
        "https://user:pass@host?mail=a@b.net\n",
    ],
)
def test_url_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '<add key="Password" value="{value}"/>\n',
        '  <add name="ApiKey" value="{value}">\n',
        "<add key='DbPassword' value='{value}' />\n",
    ],
)
def test_xml_config_key_and_value_attributes(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        '<add key="Password" value="$(DB_PASSWORD)"/>\n',
        '<add key="Password" value="changeme"/>\n',
        '<add key="PasswordLength" value="Zq8xK2mW9pL4vT7a"/>\n',
        '<add name="ApiKey" value="ConfigurationManager"/>\n',
    ],
)
def test_xml_config_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        '{{"name": "db_password", "value": "{value}"}}\n',
        '[\n  {{\n    "name": "DB_PASSWORD",\n    "value": "{value}"\n  }}\n]\n',
        'env:\n  - name: API_TOKEN\n    value: "{value}"\n',
        'env:\n  - name: "STRIPE_KEY"\n    value: {value}\n',
    ],
)
def test_name_value_pairs_in_json_and_yaml(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "db_password", "value": "${DB_PASSWORD}"}\n',
        '{"name": "db_password_file", "value": "Zq8xK2mW9pL4vT7a"}\n',
        "env:\n  - name: API_TOKEN\n    valueFrom:\n      secretKeyRef: {name: api}\n",
        "env:\n  - name: API_TOKEN\n    value: $(TOKEN_FROM_FILE)\n",
        "env:\n  - name: API_TOKEN\n    value: rotating\n",
    ],
)
def test_name_value_look_alikes_read_unchanged(text: str) -> None:
    assert_clean(text)


@pytest.mark.parametrize(
    "template",
    [
        'auth = ("password", "{value}")\n',
        'config.set("api_key", "{value}")\n',
        "pairs = [('client_secret', '{value}')]\n",
        'headers["X-Api-Key"] = "{value}"\n',
    ],
)
def test_tuple_and_call_argument_pairs(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        'auth = ("password", password)\n',
        'config.set("api_key", os.environ["API_KEY"])\n',
        'form.add("password", "Password")\n',
        'parser.add_argument("--password", "-p")\n',
        'value = kwargs.get("token", "")\n',
    ],
)
def test_tuple_and_call_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


@pytest.mark.parametrize(
    "template",
    [
        "mysql -u root -p{value} -h db.internal app\n",
        "mysqldump -h db -uadmin -p'{value}' app > dump.sql\n",
        'RUN mysql --user=app --password="{value}" < schema.sql\n',
        "mysql --password={value} app\n",
    ],
)
def test_mysql_password_on_the_command_line(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "line",
    [
        "mysql -u root -p app\n",
        'mysql -u root -p"$MYSQL_ROOT_PASSWORD" app\n',
        "mysql -uroot -proot\n",
        "mysql -h db -P3306 -p${DB_PASS}\n",
        "import mysql.connector  # -p is asked for interactively\n",
    ],
)
def test_mysql_look_alikes_read_unchanged(line: str) -> None:
    assert_clean(line)


def test_a_long_line_of_near_misses_scans_in_linear_time() -> None:
    import time

    line = ("mysql " * 50_000) + ('("password", ' * 20_000) + ("- name: pw " * 20_000)
    started = time.process_time()
    assert find_secrets(line) == []
    assert time.process_time() - started < 3.0
