"""A remote client's card (pure): every text a requester chose -- its name, its id, the hosts of
its metadata document and redirect URI, the roots' names and directories -- reaches every client
of the card inert, whatever it holds; and the terminal's rendering never lets a row's value
start a row of its own, even if a card arrived un-escaped."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from safeport.action_gateway.approvals.cards import ClientAuthorization, build_client_card
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.cli.cards.card_text import card_lines
from safeport.shared.visible_text import checked_inert, visible

PEER = PeerIdentity(
    uid=1,
    gid=1,
    chain=(ProcessInfo(pid=5, start_time=1, uid=1, name="sp", exe="/usr/bin/sp", exe_sha256=None),),
)
FORGED = "redirect: chatgpt.com"
BREAKERS = ("\n", "\r", "\r\n", "\x1b[2K", "\u2028", "\u2029", "\u202e", "\u200b", "\x00", "\t",
            "\x0b", "\x0c", "\x85")  # fmt: skip


def _question(**hostile: object) -> ClientAuthorization:
    values: dict[str, object] = {
        "request_id": "r",
        "client_id": "sp-abc",
        "client_name": "Claude",
        "metadata_from": "registered here",
        "redirect_host": "127.0.0.1:9",
        "roots": ("docs~1a2b",),
        "root_dirs": ("/home/me/docs",),
        "profile": "reader",
        "token_minutes": 10,
        "user_code": "BCDF-GHJK",
    }
    return ClientAuthorization(**(values | hostile))  # type: ignore[arg-type]


def _texts(value: object) -> list[str]:
    """Every string inside a card's view, keys and values, at any depth."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *_texts(item)]]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _texts(item)]
    return []


def _view(question: ClientAuthorization) -> dict[str, object]:
    return build_client_card("c1", PEER, question, now=0, timeout_s=60).view(0).model_dump()


def _assert_inert(view: dict[str, object]) -> None:
    for text in _texts(view):
        assert visible(text) == text, text  # no character a person could not see as itself


@pytest.mark.parametrize("breaker", BREAKERS, ids=[repr(b) for b in BREAKERS])
@pytest.mark.parametrize(
    "field", ["client_name", "client_id", "metadata_from", "redirect_host", "roots", "root_dirs"]
)
def test_a_requesters_text_in_any_field_reaches_the_card_inert(field: str, breaker: str) -> None:
    text = f"X{breaker}{FORGED}"
    value: object = (
        (f"{text}~1a2b",) if field == "roots" else (text,) if field == "root_dirs" else text
    )
    view = _view(_question(**{field: value}))
    _assert_inert(view)
    lines = card_lines(view, width=100)
    assert not any(line.startswith(("redirect:", FORGED)) for line in lines)
    assert [line.split()[0] for line in lines if line.startswith("action ")] == ["action"]


def test_the_reviewers_name_stays_on_the_action_line_and_the_client_field_alike() -> None:
    view = _view(_question(client_name=f"X\n{FORGED}"))
    assert view["target"] == f"X\\u000a{FORGED}"
    assert dict(view["fields"])["client"] == view["target"]  # type: ignore[call-overload]
    lines = card_lines(view, width=100)
    assert f"action      oauth_client X\\u000a{FORGED} / authorize" in lines
    assert [line for line in lines if line.startswith("redirect")] == ["redirect    127.0.0.1:9"]


@given(
    st.text(max_size=40),
    st.text(max_size=40),
    st.text(max_size=40),
    st.text(min_size=1, max_size=20),
    st.text(max_size=40),
)
def test_no_text_a_requester_chose_leaves_anything_but_inert_text_in_the_view(
    name: str, client_id: str, host: str, root: str, directory: str
) -> None:
    question = _question(
        client_name=name,
        client_id=client_id,
        metadata_from=host,
        redirect_host=host,
        roots=(root,),
        root_dirs=(directory,),
    )
    view = _view(question)
    _assert_inert(view)
    # And as JSON (`sp approvals list --json`): one line, nothing to unescape into a break.
    assert "\n" not in json.dumps(view, ensure_ascii=False)


@pytest.mark.parametrize("row", ["target", "operation", "credential", "effect", "scope_text"])
def test_a_card_that_arrives_unescaped_still_prints_each_row_on_one_line(row: str) -> None:
    """The terminal escapes again: a card from a gateway that missed a value (or a relay that
    rewrote one) still cannot print a line of its own."""
    view = _view(_question())
    view[row] = f"X\n{FORGED}\r\x1b[2K\u202e"
    lines = card_lines(view, width=100)
    assert not any(line.lstrip().startswith(("redirect:", FORGED)) for line in lines)
    assert all(visible(line) == line for line in lines)


def test_text_the_gateway_writes_itself_is_checked_not_trusted() -> None:
    assert checked_inert("access 10 min") == "access 10 min"
    assert checked_inert('{\n  "a": "\\u001b"\n}', lines=True).count("\n") == 2
    for bad in ("a\nb", "a\x1bb", "a\u202eb", "a\u200bb"):
        with pytest.raises(ValueError):
            checked_inert(bad)
    with pytest.raises(ValueError):
        checked_inert("a\n\x1b", lines=True)
