"""A short password a person chose, quoted under a name that can only mean a password (and under
that name's misspellings), is withheld; what no one logs in with stays served: placeholders,
lookups, expressions, type names, one ordinary word, the name itself, a path under ``pwd``, and
names that only look like ``password`` (``passport``, ``passed``, ``bypass``)."""

from __future__ import annotations

import secrets

import pytest

from safeport.shared.secret_scan import find_secrets
from safeport.shared.secret_scan.checks import is_placeholder
from safeport.shared.secret_scan.passwords import misspelled_password


def chosen(length: int = 6) -> str:
    """A short password as a person types one: letters, a digit and a symbol."""
    while True:
        letters = "".join(secrets.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(length - 2))
        value = letters + str(secrets.randbelow(10)) + secrets.choice("!#%&*+-?@^")
        if not is_placeholder(value):
            return value


def assert_only(template: str, value: str) -> None:
    text = template.format(value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in find_secrets(text)] == [(at, at + len(value))], text


@pytest.mark.parametrize(
    "template",
    [
        'password = "{value}"\n',
        "PASSWORD='{value}'\n",
        'db_password: "{value}"\n',
        '{{"user": "ann", "password": "{value}"}}\n',
        '    "Password" : "{value}",\n',
        "pwd = '{value}'\n",
        'conn.passwd = "{value}";\n',
        'String passphrase = "{value}";\n',
        "  passphrase: '{value}'\n",
        'val adminPwd = "{value}"\n',
        "<password>{value}</password>\n",
        '<Password encrypted="false">{value}</Password>\n',
        "<pwd>{value}</pwd>\n",
        'if password == "{value}":\n',
        'connect(host="db", password="{value}")\n',
    ],
)
def test_a_short_quoted_literal_under_a_password_name_is_withheld(template: str) -> None:
    for length in (5, 7, 10):
        assert_only(template, chosen(length))


@pytest.mark.parametrize(
    "name", ["passowrd", "pasword", "paasword", "passworsd", "passwrd", "pswd", "Passwrod", "PASWD"]
)
@pytest.mark.parametrize("template", ['{name} = "{value}"\n', '"{name}": "{value}",\n'])
def test_a_misspelled_password_name_is_a_password_name(name: str, template: str) -> None:
    value = chosen(8)
    text = template.format(name=name, value=value)
    at = text.index(value)
    assert [(s.start, s.end) for s in find_secrets(text)] == [(at, at + len(value))], text


@pytest.mark.parametrize(
    "line",
    [
        'password = "hidden"\n',
        'password = "Password"\n',
        'password = "string"\n',
        'password: "required"\n',
        'password = "new-password"\n',
        'password = "${DB_PASSWORD}"\n',
        'password = "{{ vault_pw }}"\n',
        'password = "<your password>"\n',
        'password = "%(pw)s"\n',
        'password = "********"\n',
        'password = "changeme"\n',
        'password = "abc"\n',
        'password = "on-screen"\n',
        'password = "os.environ[PW]"\n',
        'password = "settings.DB_PASSWORD"\n',
        'pwd = "/home/ann/src"\n',
        'pwd = "./build"\n',
        'password = "passwrd"\n',
        "password = get_password()\n",
        "password = k3!zq9\n",  # unquoted: a name in code, not a literal
        'password_hint = "k3!zq9"\n',
        'password_label = "Pa55word:"\n',
        'pass = "k3!zq9"\n',
        'pw = "k3!zq9"\n',
    ],
)
def test_what_no_one_logs_in_with_stays_served(line: str) -> None:
    assert find_secrets(line) == [], line


@pytest.mark.parametrize(
    "line",
    [
        'passport = "x8!kq2"\n',
        'passed = "x8!kq2"\n',
        'passes = "x8!kq2"\n',
        'parsed = "x8!kq2"\n',
        'pasted = "x8!kq2"\n',
        'passer = "x8!kq2"\n',
        'passage = "x8!kq2"\n',
        'passenger = "x8!kq2"\n',
        'passive = "x8!kq2"\n',
        'passthrough = "x8!kq2"\n',
        'bypass = "x8!kq2"\n',
        'compass = "x8!kq2"\n',
        'password_reset_url = "x8!kq2"\n',
        'swordfish = "x8!kq2"\n',
    ],
)
def test_names_that_only_look_like_password_stay_served(line: str) -> None:
    assert find_secrets(line) == [], line


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("passowrd", True),
        ("pasword", True),
        ("paasword", True),
        ("passworsd", True),
        ("passwrd", True),
        ("pswd", True),
        ("passord", True),
        ("password", False),
        ("passwd", False),
        ("passport", False),
        ("passing", False),
        ("passed", False),
        ("parsed", False),
        ("pasted", False),
        ("sword", False),
        ("passwordreseturl", False),
    ],
)
def test_misspelling_rule(word: str, expected: bool) -> None:
    assert misspelled_password(word) is expected
