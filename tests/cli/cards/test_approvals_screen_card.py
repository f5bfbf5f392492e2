"""The full-screen view shows a card exactly as the plain lines do, at its pane's width, and
never takes a yes for a card whose end the person has not had on screen.

Driven headless with Textual's pilot; the gateway's side is a stand-in that records answers
(the view's drawing and key handling are what is tested here; the link is tested end to end
in test_approvals_screen.py).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from typing import Any

from safeport.action_gateway.approvals.cards import argument_lengths
from safeport.cli.cards.approvals_screen import ApprovalsApp
from safeport.cli.cards.card_text import card_lines, readable_at
from safeport.gateway_client.approver_session import CardArrived
from safeport.gateway_client.approver_thread import News
from safeport.shared.visible_text import inert
from tests.cli.cards.test_card_on_a_terminal import SPACE_MOVED


class RecordingLink:
    """What the view asks of the gateway, written down."""

    def __init__(self, tell: Callable[[News], None]) -> None:
        self.answers: list[tuple[str, bool]] = []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def answer(self, card_id: str, approve: bool) -> None:
        self.answers.append((card_id, approve))

    def revoke(self, session_id: str) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _card(message: str, body_rows: int = 0) -> dict[str, Any]:
    fields: list[list[str]] = [["command", inert(shlex.join(["echo", message]))]]
    if body_rows:
        fields.append(["body", "\n".join(f'  "k{i}": "v{i}",' for i in range(body_rows))])
    fields.append(["lengths", argument_lengths({"msg": message})])
    return {"id": "c-7", "expires_in_s": 300, "fields": fields}


def _view(size: tuple[int, int], card: dict[str, Any], act: Any) -> tuple[list[str], Any]:
    links: list[RecordingLink] = []
    clock = Clock()

    def factory(tell: Callable[[News], None]) -> Any:
        links.append(RecordingLink(tell))
        return links[0]

    async def drive() -> tuple[list[str], Any]:
        app = ApprovalsApp(factory, clock=clock)
        async with app.run_test(size=size) as pilot:
            app._apply(CardArrived(card=card, received_at=clock.now))
            for _ in range(3):
                await pilot.pause()
            rows = [strip.text for strip in app.screen._compositor.render_strips()]
            clock.now += 5  # past the moment in which a key is taken for the card before
            result = await act(app, pilot)
            return rows, (result, links[0].answers, list(app.outcomes))

    return asyncio.run(drive())


async def _nothing(app: ApprovalsApp, pilot: Any) -> None:
    return None


def _card_rows(rows: list[str]) -> list[str]:
    """The text inside the card's pane, one entry per screen row, as a person sees it."""
    start = next(i for i, row in enumerate(rows) if "waiting for your" in row)
    out = []
    for row in rows[start + 1 :]:
        if row.startswith("╰"):
            break
        out.append(row[2:-3].rstrip())  # the border, the padding, the scrollbar gutter
    return out


def test_the_pane_shows_the_plain_lines_exactly_at_its_width_even_for_wide_characters() -> None:
    # Before, the view drew at least 40 columns into a narrower pane and let it wrap the rows
    # itself (no mark, spaces at the break gone); wide characters made rows wider still.
    for one, two in SPACE_MOVED.values():
        for columns in (30, 36, 44, 80):
            first, _ = _view((columns, 80), _card(one), _nothing)
            second, _ = _view((columns, 80), _card(two), _nothing)
            assert _card_rows(first) != _card_rows(second)
            width = columns - 6
            assert readable_at(width)
            expected = card_lines(_card(one), width=width, expires_in_s=300)
            assert _card_rows(first)[: len(expected)] == [line.rstrip() for line in expected]


async def _press_y(app: ApprovalsApp, pilot: Any) -> None:
    await pilot.press("y")
    await pilot.pause()


def test_a_card_taller_than_its_pane_is_not_approved_until_its_end_was_shown() -> None:
    # Forty body rows on a 24-row terminal: the end of the body (and the lengths row) is
    # below the pane. Before, the pane cut it off and y approved what nobody could see.
    rows, (_, answers, outcomes) = _view((80, 24), _card("x", body_rows=40), _press_y)
    assert '"k39"' not in "\n".join(rows)
    assert answers == []
    assert "the card goes on below: PgDn to its end first" in outcomes[-1]


async def _page_to_end_then_y(app: ApprovalsApp, pilot: Any) -> list[str]:
    for _ in range(10):
        await pilot.press("pagedown")
    await pilot.pause()
    await pilot.pause()
    rows = [strip.text for strip in app.screen._compositor.render_strips()]
    await pilot.press("y")
    await pilot.pause()
    return rows


def test_a_tall_card_is_approved_once_paged_to_its_end() -> None:
    _, (rows, answers, _) = _view((80, 24), _card("x", body_rows=40), _page_to_end_then_y)
    assert '"k39"' in "\n".join(rows) and "approve?" in "\n".join(rows)
    assert answers == [("c-7", True)]


def test_a_card_that_fits_is_approved_at_once_and_no_is_always_taken() -> None:
    _, (_, answers, _) = _view((80, 40), _card("uptime"), _press_y)
    assert answers == [("c-7", True)]

    async def press_n(app: ApprovalsApp, pilot: Any) -> None:
        await pilot.press("n")
        await pilot.pause()

    _, (_, answers, _) = _view((80, 24), _card("x", body_rows=40), press_n)
    assert answers == [("c-7", False)]


def test_a_pane_too_narrow_for_a_card_says_so_and_takes_no_yes() -> None:
    rows, (_, answers, outcomes) = _view((26, 40), _card("hello"), _press_y)
    text = " ".join(_card_rows(rows))
    assert "widen" in text and "hello" not in text
    assert answers == []
    assert "widen the terminal" in outcomes[-1]
