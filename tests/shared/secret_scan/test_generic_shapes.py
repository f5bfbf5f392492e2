"""Generic assignments in the shapes configuration and code write them besides ``name = value``:
header names in any capitalisation, short password names, XML ``<add key=… value=…>``, JSON and
Kubernetes name/value pairs, tuples and call arguments, URLs whose password holds an ``@``, and
``mysql -p…``. Each is found with its exact span; its look-alikes read unchanged."""

from __future__ import annotations

import secrets

import pytest

from safeport.shared.secret_scan import find_secrets


def fresh() -> str:
    """A value no test has seen: random characters ending in a digit, as a generator makes."""
    return secrets.token_urlsafe(18).replace("-", "x").replace("_", "Q") + str(
        secrets.randbelow(10)
    )


def assert_only_secret(template: str) -> None:
    value = fresh()
    text = template.format(value=value)
    spans = [(span.start, span.end) for span in find_secrets(text)]
    at = text.index(value)
    assert spans == [(at, at + len(value))], text


def assert_clean(text: str) -> None:
    assert find_secrets(text) == [], text


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
