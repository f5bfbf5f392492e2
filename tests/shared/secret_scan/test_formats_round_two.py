"""Formats added in the second round: GitHub's dated installation tokens, Akamai EdgeGrid
tokens, NTLM's authenticate message in base64, MySQL password hashes. Fresh random bodies in the
places people paste them; the look-alikes beside each (an NTLM negotiate message, a MySQL ``*``
that is no hash, stand-ins in the format's shape) stay served."""

from __future__ import annotations

import base64
import json
import os
import secrets
import string

import pytest

from safeport.shared.secret_scan import find_secrets

LOWER_DIGITS = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits


def draw(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def dated_installation_token() -> str:
    header = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    issuer = str(secrets.randbelow(10**6))
    claims = b64url(json.dumps({"iat": 1_800_000_000, "iss": issuer}).encode())
    date = f"2026{secrets.randbelow(12) + 1:02d}{secrets.randbelow(28) + 1:02d}"
    return f"ghs_{date}_{header}.{claims}.{b64url(os.urandom(32))}"


def ntlm(message_type: int, *, pointing: bool = True) -> str:
    """An NTLMSSP message in base64: for type 3, security buffers whose NT response (24 random
    bytes) lies in the payload (or, unless ``pointing``, past its end)."""
    payload = os.urandom(24) + os.urandom(24) + "CORP".encode("utf-16-le")
    offset = 64 if pointing else 4096
    buffers = (
        (24).to_bytes(2, "little") * 2
        + (64).to_bytes(4, "little")  # LM response
        + (24).to_bytes(2, "little") * 2
        + (offset + 24).to_bytes(4, "little")  # NT response
        + bytes(36)
    )
    return base64.b64encode(
        b"NTLMSSP\x00" + bytes([message_type, 0, 0, 0]) + buffers + payload
    ).decode()


def mysql_hash() -> str:
    return "*" + secrets.token_hex(20).upper()


def only(text: str, value: str, kind: str) -> None:
    at = text.index(value)
    found = [(s.start, s.end, s.kind) for s in find_secrets(text)]
    assert found == [(at, at + len(value), kind)], text


@pytest.mark.parametrize(
    "template",
    ["{value}\n", "GITHUB_TOKEN={value}\n", "Authorization: token {value}\n", "  - {value} # ci\n"],
)
def test_a_dated_installation_token_is_withheld_whole(template: str) -> None:
    value = dated_installation_token()
    spans = find_secrets(template.format(value=value))
    text = template.format(value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in spans] == [(at, at + len(value))], text


def test_a_dated_installation_token_with_a_random_body_is_withheld() -> None:
    value = f"ghs_20260304_{draw(ALNUM, 40)}"
    only(f"token: {value}\n", value, "github-token")


@pytest.mark.parametrize(
    "template",
    ["T: {value}\n", "client_token = {value}\n", "access_token: {value}\n", "  {value}\n"],
)
def test_akamai_tokens_are_withheld_after_any_prefix(template: str) -> None:
    value = f"akab-{draw(LOWER_DIGITS, 16)}-{draw(LOWER_DIGITS, 16)}"
    only(template.format(value=value), value, "akamai-token")


@pytest.mark.parametrize(
    "template",
    ["{value}\n", "captured: {value}\n", "WWW-Authenticate-Reply {value}\n", '"{value}",\n'],
)
def test_an_ntlm_authenticate_message_is_withheld(template: str) -> None:
    value = ntlm(3)
    text = template.format(value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in find_secrets(text)] == [(at, at + len(value))], text


def test_other_ntlm_messages_stay_served() -> None:
    for message in (ntlm(1), ntlm(2), ntlm(3, pointing=False)):
        text = f"captured: {message}\n"
        assert find_secrets(text) == [], text


@pytest.mark.parametrize(
    "template",
    [
        "ALTER USER 'app'@'%' IDENTIFIED WITH 'mysql_native_password' AS '{value}';\n",
        'CREATE USER app@localhost IDENTIFIED WITH mysql_native_password AS "{value}"\n',
        "create user app identified with mysql_native_password as '{value}' require none\n",
        "GRANT USAGE ON *.* TO 'app'@'%' IDENTIFIED BY PASSWORD '{value}';\n",
        "SET PASSWORD FOR 'app'@'%' = PASSWORD '{value}';\n",
    ],
)
def test_a_mysql_password_hash_is_withheld(template: str) -> None:
    value = mysql_hash()
    only(template.format(value=value), value, "mysql-password-hash")


@pytest.mark.parametrize(
    "line",
    [
        "SELECT * AS '*' FROM t;\n",
        "SELECT c AS '*total*' FROM t;\n",
        "ALTER USER app IDENTIFIED WITH mysql_native_password AS '*" + "0" * 40 + "';\n",
        "ALTER USER app PASSWORD EXPIRE INTERVAL 90 DAY;\n",
        "ghs_20260101_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        "akab-xxxxxxxxxxxxxxxx-xxxxxxxxxxxxxxxx\n",
        "alias akab-short-one\n",
        "host = akab-q8w2ke7rt4zn1vxp-m5hs0bj3c9ld6fya.luna.akamaiapis.net\n",
    ],
)
def test_look_alikes_stay_served(line: str) -> None:
    assert find_secrets(line) == [], line


@pytest.mark.parametrize(
    "template",
    [
        "DemoToken: {value}\n",
        "api_token: {value} <- for the demo user\n",
        "  client_secret: {value}\n",
        "Credential:{value}\n",
    ],
)
@pytest.mark.parametrize("padding", ["=", "=="])
def test_a_base64_value_ending_in_padding_after_a_colon_is_withheld(
    template: str, padding: str
) -> None:
    """``name: <base64>=`` is no type annotation with a default: the "=" ends the value."""
    value = "/"
    # A leading slash reads as a path, and an unquoted value needs a digit (known limits).
    while value.startswith("/") or not any(c.isdigit() for c in value):
        value = base64.b64encode(os.urandom(20 if padding == "=" else 19)).decode()
    text = template.format(value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in find_secrets(text)] == [(at, at + len(value))], text


@pytest.mark.parametrize(
    "line",
    [
        'def connect(token: str="", retries: int=3):\n',
        "def f(password: Optional[str]=None) -> None:\n",
        "secret: bytes=b''\n",
        "token: int=5\n",
    ],
)
def test_type_annotations_with_a_glued_default_stay_served(line: str) -> None:
    assert find_secrets(line) == [], line
