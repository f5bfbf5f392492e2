"""The book of connect flows: bounded in number, expired after ten minutes, one-shot, each only
for the user who began it, and every secret a flow held wiped when it goes."""

from __future__ import annotations

from typing import cast

import pytest

from safeport.action_gateway.oauth.errors import OAuthRefused
from safeport.action_gateway.oauth.flows import FLOW_TTL_S, MAX_FLOWS, ConnectClient, Flow, FlowBook
from safeport.vault.secrets import SecretBytes


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _flow(uid: int = 1000) -> Flow:
    client = cast(ConnectClient, object())  # a flow in the book is never asked anything here
    return Flow("tracker", uid, ("read",), client, SecretBytes(b"CANARY-CLIENT-SECRET"))


def test_a_flow_is_taken_once_and_its_secret_wiped_when_dropped() -> None:
    book = FlowBook(_Clock())
    flow = book.add(_flow())
    assert book.take(flow.id, 1000) is flow
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        book.take(flow.id, 1000)
    assert flow.client_secret is not None and len(flow.client_secret) > 0
    book.drop(flow)
    assert len(flow.client_secret) == 0


def test_another_user_can_neither_take_nor_see_a_flow() -> None:
    book = FlowBook(_Clock())
    flow = book.add(_flow(uid=1000))
    for uid in (1001, 0):
        with pytest.raises(OAuthRefused):
            book.take(flow.id, uid)
        with pytest.raises(OAuthRefused):
            book.get(flow.id, uid)
    assert book.get(flow.id, 1000) is flow


def test_a_flow_expires_after_ten_minutes_and_is_wiped() -> None:
    clock = _Clock()
    book = FlowBook(clock)
    flow = book.add(_flow())
    clock.now += FLOW_TTL_S
    assert book.get(flow.id, 1000) is flow
    clock.now += 1
    with pytest.raises(OAuthRefused):
        book.get(flow.id, 1000)
    assert flow.client_secret is not None and len(flow.client_secret) == 0


def test_the_book_keeps_the_newest_flows_only() -> None:
    clock = _Clock()
    book = FlowBook(clock)
    flows = []
    for _ in range(MAX_FLOWS + 3):
        clock.now += 1
        flows.append(book.add(_flow()))
    for old in flows[:3]:
        with pytest.raises(OAuthRefused):
            book.get(old.id, 1000)
        assert old.client_secret is not None and len(old.client_secret) == 0
    assert all(book.get(f.id, 1000) is f for f in flows[3:])


def test_clearing_wipes_every_flow_and_no_repr_shows_a_secret() -> None:
    book = FlowBook(_Clock())
    flow = book.add(_flow())
    assert "CANARY" not in repr(flow)
    book.clear()
    with pytest.raises(OAuthRefused):
        book.get(flow.id, 1000)
    assert flow.client_secret is not None and len(flow.client_secret) == 0
