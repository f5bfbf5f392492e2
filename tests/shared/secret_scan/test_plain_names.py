"""Names that name no secret are done before any rule looks at what follows them; a name that
does, or may, still gets every rule. Each plain name below sits where a secret would be found
after a secret-like one, so a wrong verdict either way shows."""

from __future__ import annotations

import pytest

from safeport.shared.secret_scan.plain_names import names_no_secret
from tests.shared.secret_scan.drawn_values import assert_clean, assert_only_secret


def _verdict(line: str, word: str) -> bool:
    at = line.index(word)
    return names_no_secret(line, at, at + len(word), 0, len(line))


@pytest.mark.parametrize(
    ("line", "word"),
    [
        ('    "author": "Jane Doe",', "auth"),
        ("except KeyError:", "Key"),
        ("use_token = True", "token"),
        ("self.authority = authority", "auth"),
        ("tokenizer = Tokenizer()", "token"),
        ("for credit in credits:", "cred"),
        ("value = secretary.name", "secret"),
    ],
    ids=["author", "KeyError", "use_token", "authority", "tokenizer", "credit", "secretary"],
)
def test_a_name_that_names_no_secret_is_done_at_once(line: str, word: str) -> None:
    assert _verdict(line, word)


@pytest.mark.parametrize(
    ("line", "word"),
    [
        ("password = x", "pass"),
        ("auth = x", "auth"),
        ("self.api_key = x", "key"),
        ("key = x", "key"),
        ("#define AESKEY {", "KEY"),
        ("HMACSECRET = x", "SECRET"),
        ("x=1%26auth%3Dx", "auth"),
        (
            "the_author_of_this_very_long_name_that_goes_on_and_on_past_reach_"
            + "a" * 40
            + "token",
            "token",
        ),
        ("x" * 70 + "_author = x", "auth"),
    ],
    ids=[
        "password",
        "auth",
        "api_key",
        "weak-key",
        "constant-ending-in-key",
        "constant-ending-in-secret",
        "url-encoded-name",
        "name-past-reach-after",
        "name-past-reach-before",
    ],
)
def test_a_name_that_may_name_a_secret_is_left_to_the_rules(line: str, word: str) -> None:
    assert not _verdict(line, word)


@pytest.mark.parametrize(
    "template",
    [
        "author_token = '{value}'\n",
        "AUTHOR_PASSWORD={value}\n",
        "KeyErrorSecret: {value}\n",
        'tokenizer.api_key = "{value}"\n',
        "  credit-card-pin-password: {value}\n",
        "    pass\npassword: {value}\n",
    ],
    ids=[
        "author_token",
        "AUTHOR_PASSWORD",
        "KeyErrorSecret",
        "api_key-after-plain",
        "dashed",
        "after-pass",
    ],
)
def test_a_plain_word_inside_a_secret_name_hides_nothing(template: str) -> None:
    assert_only_secret(template)


@pytest.mark.parametrize(
    "text",
    [
        '"author": "Dr Ada Lovelace-King 1815",\n',
        "except KeyError as error:\n    pass\n",
        "use_token = settings.flag_Q9wWx3Rk2LmZ7pT\n",
        "    pass\n",
    ],
    ids=["author", "KeyError", "use_token", "bare-pass"],
)
def test_plain_names_read_unchanged(text: str) -> None:
    assert_clean(text)
