"""A withheld value is withheld wherever else the text repeats it, and to its very end.

Rules recognise a secret where it is named (``password: …``); the same value written again
without its name, or longer than a rule's bounded pattern reaches, is the same secret.
"""

from __future__ import annotations

import base64
import secrets
import string
import time

import pytest

from safeport.shared.secret_scan import find_secrets, redact


def _password() -> str:
    """A password the detector withholds where it is named (a few random draws read as a
    stand-in or too plain, and are drawn again): what these tests ask about is its copies."""
    alphabet = string.ascii_letters + string.digits
    while True:
        value = "".join(secrets.choice(alphabet) for _ in range(12)) + "#7q"
        spans = find_secrets(f"password: {value}\n")
        if [(s.start, s.end) for s in spans] == [(10, 10 + len(value))]:
            return value


def _survives(value: str, text: str) -> bool:
    """Whether any 8 characters of ``value`` in a row are still in ``text``."""
    return any(value[at : at + 8] in text for at in range(0, len(value) - 7))


@pytest.mark.parametrize(
    "template",
    [
        "password: {v}\nlater on: log in as admin with {v} and change it\n",
        "DB_PASSWORD={v}\nDATABASE_URL_TEMPLATE=postgres host=db user=app {v}\n",
        "account:{v} password:{v}\n",
        "{v} ID:master {v} Password:{v}\n",
        "# the deploy key\napi_secret = '{v}'\n\nconnect(host, 'svc', '{v}')\n",
        'pwd = "{v}"\n# mirror of the above: "{v}"\n',
    ],
)
def test_every_copy_of_a_withheld_value_is_withheld(template: str) -> None:
    value = _password()
    text = template.format(v=value)
    served, findings = redact(text)
    assert findings, text
    assert not _survives(value, served), served


def test_a_copy_glued_inside_a_longer_word_is_served_and_the_value_is_not() -> None:
    value = _password()
    text = f"password: {value}\nchecksum x{value[:-3]}y stays as written\n"
    served, _ = redact(text)
    assert f"x{value[:-3]}y" in served
    assert value not in served


def test_text_that_repeats_no_withheld_value_is_unchanged_beside_the_secret() -> None:
    value = _password()
    rest = "the configuration loader reads the file once at start\n" * 3
    served, _ = redact(f"password: {value}\n{rest}")
    assert served.endswith(rest)


@pytest.mark.parametrize("length", [200, 1000, 5000])
@pytest.mark.parametrize("name", ["LONG_CREDENTIAL: ", "api_secret = '", '"client_secret": "'])
def test_a_value_longer_than_any_rule_reaches_is_withheld_to_its_end(
    name: str, length: int
) -> None:
    value = base64.b64encode(secrets.token_bytes(length)).decode()
    text = f"{name}{value}\nnext line\n"
    served, _ = redact(text)
    assert not _survives(value, served)
    assert served.endswith("\nnext line\n")


def test_a_token_in_a_file_name_leaves_the_extension_readable() -> None:
    token = "ghp_" + "".join(
        secrets.choice(string.ascii_letters + string.digits) for _ in range(36)
    )
    served, _ = redact(f"backup-{token}.json")
    assert served == "backup-[REDACTED:github-token].json"


def test_many_repeated_values_are_found_in_one_pass() -> None:
    values = [_password() for _ in range(400)]
    body = "".join(f"password: {v}\n" for v in values)
    mentions = "".join(f"copy {v} here\n" for v in reversed(values))
    text = body + mentions * 20
    started = time.process_time()
    spans = find_secrets(text)
    elapsed = time.process_time() - started
    served, _ = redact(text)
    assert not any(_survives(v, served) for v in values)
    assert len(spans) == 400 * 21
    assert elapsed < 20  # one automaton pass, not one search per value (generous on a loaded CI)


def test_a_generated_value_that_starts_with_a_slash_is_no_path() -> None:
    # Few capitals, no digit, or a slash inside: base64 looks like a path to a rule that asks
    # only for capitals and digits about one draw in three hundred.
    for _ in range(1000):
        value = "/" + base64.b64encode(secrets.token_bytes(30)).decode()
        served, _ = redact(f'api_secret = "{value}"\n')
        assert not _survives(value, served), served


@pytest.mark.parametrize(
    "path",
    [
        "/usr/local/share/safeport/config.toml",
        "/var/lib/postgresql/16/main/pg_hba.conf",
        "/home/builder/.cache/pip/wheels/ab/cd/0123456789abcdef",
        "./secrets/production/database-password.txt",
    ],
)
def test_a_path_under_a_secret_like_name_is_served(path: str) -> None:
    text = f'secret_file = "{path}"\n'
    assert redact(text)[0] == text
