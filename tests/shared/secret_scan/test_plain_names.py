"""A secret-like name that holds an ordinary word, or an ordinary name beside a secret-like word,
is judged as a whole: the ordinary word hides nothing, and the ordinary name alone reads
unchanged. The shapes where a name is read differently by different rules (a setter called on
a short receiver, prose where the name goes on after a space) are here too, since a shortcut
that judges a name once must take each reading."""

from __future__ import annotations

import secrets

import pytest

from safeport.shared.secret_scan import find_secrets
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


@pytest.mark.parametrize(
    "template",
    [
        "author_token = '{value}'\n",
        "AUTHOR_PASSWORD={value}\n",
        "KeyErrorSecret: {value}\n",
        'tokenizer.api_key = "{value}"\n',
        "  credit-card-pin-password: {value}\n",
        "    pass\npassword: {value}\n",
        'q.setPassword("{value}");\n',
        'no.client.withAuthToken("{value}")\n',
        'min-setToken("{value}")\n',
        "password-change code: {value}\n",
        "token_owner pin: {value}\n",
    ],
    ids=[
        "author_token",
        "AUTHOR_PASSWORD",
        "KeyErrorSecret",
        "api_key-after-plain",
        "dashed",
        "after-pass",
        "setter-on-short-receiver",
        "setter-on-question-receiver",
        "setter-after-dash",
        "prose-name-goes-on-code",
        "prose-name-goes-on-pin",
    ],
)
def test_a_plain_word_beside_a_secret_name_hides_nothing(template: str) -> None:
    assert_only_secret(template)


def test_an_all_capitals_name_goes_on_into_key() -> None:
    value = secrets.token_hex(20)
    text = f"AUTHORITY KEY: {value}\n"
    assert any(text[s.start : s.end] == value for s in find_secrets(text)), text


@pytest.mark.parametrize(
    "text",
    [
        '"author": "Dr Ada Lovelace-King 1815",\n',
        "except KeyError as error:\n    pass\n",
        "use_token = settings.flag_Q9wWx3Rk2LmZ7pT\n",
        "    pass\n",
        "tests passed: 1214, bypassed: 3\n",
    ],
    ids=["author", "KeyError", "use_token", "bare-pass", "passed"],
)
def test_plain_names_read_unchanged(text: str) -> None:
    assert_clean(text)
