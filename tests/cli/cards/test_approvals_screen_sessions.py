"""The open sessions table of the full-screen view shows each session's requester exactly as
its text: a program path is the requester's choice (``/tmp/[reverse]x/python`` is a path like
any other), and a table cell given a plain string would read it as Rich markup -- restyling or
hiding part of the row, or a stray closing tag failing the whole view.

Driven headless with Textual's pilot and a stand-in link, like test_approvals_screen_card.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import DataTable

from safeport.cli.cards.approvals_screen import ApprovalsApp
from safeport.gateway_client.approver_thread import News, Sessions
from safeport.shared.schemas.results import SessionView
from tests.cli.cards.test_approvals_screen_card import Clock, RecordingLink

# Each is a real path a process can run from; in Rich markup each means something else.
MARKUP_PATHS = (
    "/tmp/[reverse]hidden[/reverse]/python3",  # styled
    "/tmp/[link=https://evil.example]usr/bin/python3",  # a link, its target not shown
    "/tmp/x[/bold]/python3",  # a closing tag nothing opened: MarkupError
    "/tmp/[on black][black]/usr/bin/python3",  # text drawn in the background's colour
)


def _session(exe: str) -> SessionView:
    return SessionView(
        id="s-1",
        credential="[bold]prod-db",
        requester_pid=4242,
        requester_exe=exe,
        policy="p",
        age_s=3,
        expires_in_s=600,
    )


def _rows(sessions: list[SessionView]) -> list[list[str]]:
    def factory(tell: Callable[[News], None]) -> Any:
        return RecordingLink(tell)

    async def drive() -> list[list[str]]:
        app = ApprovalsApp(factory, clock=Clock())
        async with app.run_test(size=(160, 30)) as pilot:
            app._apply(Sessions(sessions=sessions))
            await pilot.pause()
            table = app.query_one("#sessions", DataTable)
            shown = []
            for row in range(table.row_count):
                cells = [
                    table._get_row_renderables(row).cells[col]  # what the table draws
                    for col in range(len(table.columns))
                ]
                shown.append([getattr(cell, "plain", str(cell)) for cell in cells])
            return shown

    return asyncio.run(drive())


@pytest.mark.parametrize("exe", MARKUP_PATHS)
def test_a_requesters_path_is_shown_as_its_text_never_as_markup(exe: str) -> None:
    [row] = _rows([_session(exe)])
    assert row[:3] == ["s-1", "[bold]prod-db", f"pid 4242 {exe}"]


def test_a_plain_session_reads_as_itself() -> None:
    [row] = _rows([_session("/usr/bin/python3")])
    assert row == ["s-1", "[bold]prod-db", "pid 4242 /usr/bin/python3", "10 min"]
