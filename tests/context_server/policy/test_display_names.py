"""Display names: reversible, JSON-safe, and with exactly one spelling per file name."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from safeport.context_server.policy.display_names import UndisplayableName, display_name, raw_name
from safeport.context_server.policy.read_policy import InvalidInput
from safeport.context_server.policy.request_path import parse_request_path


@given(st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b))
def test_every_name_has_a_display_form_that_leads_back_to_it(raw: bytes) -> None:
    shown = display_name(raw)
    assert raw_name(shown) == raw
    json.dumps(shown, ensure_ascii=False).encode("utf-8")  # carried by JSON as UTF-8


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"app.py", "app.py"),
        ("résumé.md".encode(), "résumé.md"),
        (b"100%.md", "100%.md"),
        (b"caf\xe9.py", "caf%E9.py"),
        (b"\xff\xfe", "%FF%FE"),
        (b"a%41", "a%2541"),
        (b"tab\there", "tab%09here"),
        (b"back\\slash", "back%5Cslash"),
        ("\u202egnp.exe".encode(), "%E2%80%AEgnp.exe"),
    ],
)
def test_ordinary_names_show_as_themselves_and_others_escaped(raw: bytes, shown: str) -> None:
    assert display_name(raw) == shown
    assert raw_name(shown) == raw


@pytest.mark.parametrize("spelling", [".%65nv", "%41pp.py", "caf%e9.py", "%2F", "a%00"])
def test_a_second_spelling_of_a_name_is_refused_not_resolved(spelling: str) -> None:
    with pytest.raises(UndisplayableName):
        raw_name(spelling)
    with pytest.raises(InvalidInput):
        parse_request_path(f"src/{spelling}", ["ws"])


def test_an_escaped_name_is_a_valid_request_path() -> None:
    assert parse_request_path("src/caf%E9.py", ["ws"]).parts == ("src", "caf%E9.py")


@pytest.mark.parametrize("text", ["", "a/b", "/"])
def test_a_plain_ascii_string_that_is_not_one_name_is_refused(text: str) -> None:
    with pytest.raises(UndisplayableName):
        raw_name(text)


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=1, max_size=30))
def test_the_ascii_shortcuts_agree_with_the_full_round_trip(text: str) -> None:
    # display_name on a str and raw_name take a shortcut for plain ASCII: it must give what
    # the byte-level path gives.
    assert display_name(text) == display_name(text.encode())
    try:
        raw = raw_name(text)
    except UndisplayableName:
        return
    assert display_name(raw) == text
