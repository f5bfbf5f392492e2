"""`sp approvals watch` on a terminal: a live full-screen view (Textual).

The card waiting for an answer, with the time left, on top (the requester's chain folded to
what differs from the usual; ``c`` shows it whole); the open sessions (revoke the highlighted
one with ``r``); the latest outcomes below, each answered card with what its action did
("done · 201"). ``y`` approves and ``n`` denies: there is no default, and a key pressed within
a moment of a new card appearing is ignored, as in the line mode, because it was meant for what
was on screen before. Everything from the gateway arrives through
:class:`~safeport.gateway_client.approver_thread.ApprovalLink`.
"""

from __future__ import annotations

import contextlib
import textwrap
import time
from collections import deque
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, Log, Static

from safeport.cli.cards.approver_prompt import GRACE_S
from safeport.cli.cards.card_text import (
    card_lines,
    human_duration,
    outcome_text,
    readable_at,
    shown,
)
from safeport.gateway_client.approver_session import CardArrived, CardClosed, CardResult
from safeport.gateway_client.approver_thread import (
    Answered,
    ApprovalLink,
    Connected,
    Disconnected,
    Failed,
    HeldLocked,
    News,
    Revoked,
    Sessions,
)
from safeport.shared.schemas.results import SessionView
from safeport.shared.visible_text import inert, visible

_OUTCOMES = {
    "approved": "approved",
    "denied": "denied",
    "timeout": "expired: nobody answered in time; nothing ran",
    "cancelled": "withdrawn by its requester; nothing ran",
    "voided": "voided (the vault was locked); nothing ran",
}

LinkFactory = Callable[[Callable[[News], None]], ApprovalLink]


def _action_of(card: dict[str, object]) -> str:
    """``ssh_exec host / command``: enough to tell one outcome line from another (already inert
    from the gateway; :func:`visible` escapes anything that is not, without doubling escapes)."""
    return visible(
        f"{shown(card.get('action'))} {shown(card.get('target'))} / {shown(card.get('operation'))}"
    )


class ApprovalsApp(App[None]):
    TITLE = "safeport approvals"
    CSS = """
    #state { height: 1; background: $boost; }
    #card-box { height: 3fr; min-height: 6; border: round $accent; scrollbar-gutter: stable; }
    #card { height: auto; padding: 0 1; }
    #sessions { height: 8; border: round $panel; }
    #outcomes { height: 1fr; min-height: 3; border: round $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "approve"),
        Binding("n", "answer(False)", "deny"),
        Binding("r", "revoke", "revoke session"),
        Binding("c", "chain", "whole chain"),
        Binding("pagedown", "card_page(1)", "card down", priority=True),
        Binding("pageup", "card_page(-1)", "card up", priority=True),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, link_factory: LinkFactory, *, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self._link_factory = link_factory
        self._link: ApprovalLink | None = None
        self._clock = clock
        self._queue: deque[CardArrived] = deque()
        self._current: CardArrived | None = None
        self._shown_at = 0.0
        self._sent = False
        self._lines_shown = 0  # the card's rows as last drawn, prompt included
        self._readable = False  # whether the card could be drawn exactly at the pane's width
        self._seen_whole = False  # whether its last row has been on screen since it was shown
        self._whole_chain = False  # the requester's chain: folded to what is unusual, or whole
        self._asked: dict[str, str] = {}  # card id → its action, for the outcome lines
        self.outcomes: list[str] = []  # what the outcomes pane shows, newest last
        self.failure: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("gateway: connecting…", id="state")
            with VerticalScroll(id="card-box"):
                yield Static("no card is waiting", id="card")
            yield DataTable(id="sessions", cursor_type="row")
            yield Log(id="outcomes")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sessions", DataTable)
        table.border_title = "open sessions (r revokes the highlighted one)"
        table.add_columns("session", "credential", "requester", "expires in")
        self.query_one("#outcomes", Log).border_title = "latest outcomes"
        box = self.query_one("#card-box", VerticalScroll)
        box.border_title = "waiting for your answer"
        self.watch(box, "scroll_y", lambda _: self._while_shown(self._note_seen), init=False)
        self._link = self._link_factory(self._from_link)
        self._link.start()
        self.set_interval(1.0, self._tick)

    def on_unmount(self) -> None:
        if self._link is not None:
            self._link.stop()

    # -- news from the gateway ------------------------------------------------------------------

    def _from_link(self, news: News) -> None:
        with contextlib.suppress(RuntimeError):  # the app is closing
            self.call_from_thread(self._apply, news)

    def _apply(self, news: News) -> None:
        state = self.query_one("#state", Static)
        if isinstance(news, Connected):
            state.update(
                "gateway: reconnected; watching again" if news.again else "gateway: connected"
            )
            if news.again:
                self._record("the gateway is back; watching again")
        elif isinstance(news, Disconnected):
            state.update("gateway: stopped — waiting for it to start again (q quits)")
            if self._current is not None or self._queue:
                self._record("the gateway stopped; its waiting cards are void")
            self._queue.clear()
            self._current = None
            self._show()
        elif isinstance(news, HeldLocked):
            state.update("gateway: restarted with its vault locked — run `sp vault unlock`")
            self._record(
                "the gateway restarted; its vault stays locked until a human runs "
                "`sp vault unlock` (this view does not unlock it); watching resumes then"
            )
        elif isinstance(news, CardArrived):
            self._asked[shown(news.card.get("id"))] = _action_of(news.card)
            self._queue.append(news)
            if self._current is None:
                self._next()
        elif isinstance(news, CardClosed):
            self._queue = deque(c for c in self._queue if str(c.card.get("id")) != news.card_id)
            why = _OUTCOMES.get(news.outcome, news.outcome)
            if news.outcome != "approved":
                self._asked.pop(news.card_id, None)  # nothing runs: no outcome follows
            self._record(f"card {self._card_name(news.card_id)}: {why}")
            if self._current is not None and str(self._current.card.get("id")) == news.card_id:
                self._current = None
                self._next()
        elif isinstance(news, CardResult):
            done = outcome_text(news.outcome, news.detail)
            self._record(f"card {self._card_name(news.card_id)}: {inert(done)}")
            self._asked.pop(news.card_id, None)
        elif isinstance(news, Answered):
            if news.error:
                self._record(f"card {inert(news.card_id)}: not recorded: {inert(news.error)}")
        elif isinstance(news, Sessions):
            self._show_sessions(news.sessions)
        elif isinstance(news, Revoked):
            done = f"not revoked: {inert(news.error)}" if news.error else "revoked"
            self._record(f"session {inert(news.session_id)}: {done}")
        elif isinstance(news, Failed):
            self.failure = news.message
            self.exit()

    # -- the person -----------------------------------------------------------------------------

    def action_answer(self, approve: bool) -> None:
        current = self._current
        if current is None:
            self._record("no card is waiting; that key was ignored")
            return
        if self._sent:
            return
        if self._clock() - self._shown_at < GRACE_S:
            self._record("key ignored: this card was just shown; read it, then answer")
            return
        if approve and not self._readable:
            self._record("y ignored: the card could not be shown whole here; widen the terminal")
            return
        self._note_seen()
        if approve and not self._seen_whole:
            # The pane holds fewer rows than the card: what is below could be anything.
            self._record("y ignored: the card goes on below: PgDn to its end first")
            return
        assert self._link is not None
        self._sent = True
        self._link.answer(str(current.card.get("id")), approve)
        signing = approve and isinstance(current.card.get("key"), dict)
        subtitle = "touch your security key…" if signing else "approving…"
        self.query_one("#card-box").border_subtitle = subtitle if approve else "denying…"

    def action_chain(self) -> None:
        """Show the requester's chain whole (digests, scripts), or folded again."""
        self._whole_chain = not self._whole_chain
        if self._current is not None:
            self._seen_whole = False  # the card is drawn anew: its end must be seen again
            self._show()

    def action_card_page(self, pages: int) -> None:
        box = self.query_one("#card-box", VerticalScroll)
        (box.scroll_page_down if pages > 0 else box.scroll_page_up)(animate=False)

    def action_revoke(self) -> None:
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0 or self._link is None:
            self._record("no session to revoke")
            return
        row = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        if row.value is not None:
            self._link.revoke(row.value)

    # -- drawing --------------------------------------------------------------------------------

    def _next(self) -> None:
        self._current = None
        while self._queue:
            arrived = self._queue.popleft()
            if self._left(arrived) > 0:
                self._current = arrived
                self._shown_at = self._clock()
                self._sent = False
                self._seen_whole = False
                break
        self._show()
        self.query_one("#card-box", VerticalScroll).scroll_home(animate=False)

    def _show(self) -> None:
        card = self.query_one("#card", Static)
        box = self.query_one("#card-box", VerticalScroll)
        box.border_subtitle = ""
        if self._current is None:
            card.update("no card is waiting")
            return
        # Drawn at the pane's own width: a row wider than the pane would be wrapped (or cut)
        # by the view, where no mark shows it, and two values could look alike.
        inside = box.scrollable_content_region.width - 2  # the card's padding
        width = min(inside if inside > 0 else self.size.width - 6, 120)
        self._readable = readable_at(width)
        lines = card_lines(
            self._current.card,
            width=width,
            expires_in_s=self._left(self._current),
            whole_chain=self._whole_chain,
            unfold_hint="" if self._whole_chain else "c: the whole chain",
        )
        if self._queue:
            lines.append(f"{len(self._queue)} more waiting")
        chain = "c: the chain folded" if self._whole_chain else "c: the whole chain"
        lines += textwrap.wrap(
            f"approve?  y = yes   n = no   (no default)   {chain}", max(width, 1)
        )
        self._lines_shown = len(lines)
        card.update(Text("\n".join(lines)))
        self.call_after_refresh(self._while_shown, self._note_seen)

    def on_resize(self) -> None:
        self.call_after_refresh(self._while_shown, self._show)

    def _while_shown(self, draw: Callable[[], None]) -> None:
        # A redraw asked for just before the view closes finds its widgets gone.
        with contextlib.suppress(NoMatches):
            draw()

    def _note_seen(self) -> None:
        """Remember that the card's last row has been on screen, once the pane is laid out for
        the card as it is now drawn (a stale layout could show the end of another)."""
        if self._current is None:
            return
        card = self.query_one("#card", Static)
        box = self.query_one("#card-box", VerticalScroll)
        drawn = card.size.height == self._lines_shown
        if drawn and box.scroll_y + box.scrollable_content_region.height >= card.outer_size.height:
            self._seen_whole = True
        if not self._sent:
            box.border_subtitle = "" if self._seen_whole else "the card goes on below: PgDn"

    def _tick(self) -> None:
        if self._current is not None and self._left(self._current) <= 0:
            self._current = None  # the gateway's card.closed follows and is recorded
            self._next()
        elif self._current is not None:
            self._while_shown(self._show)

    def _left(self, arrived: CardArrived) -> int:
        deadline = arrived.received_at + int(arrived.card.get("expires_in_s") or 0)
        return max(0, round(deadline - self._clock()))

    def _show_sessions(self, sessions: list[SessionView]) -> None:
        table = self.query_one("#sessions", DataTable)
        table.clear()
        for grant in sessions:
            # As Text: a table cell given a string reads it as Rich markup, and a requester's
            # program path (``/tmp/[reverse]x/python``) would restyle or hide part of its row.
            table.add_row(
                Text(inert(grant.id)),
                Text(inert(grant.credential)),
                Text(inert(f"pid {grant.requester_pid} {grant.requester_exe}")),
                Text(human_duration(grant.expires_in_s)),
                key=grant.id,
            )

    def _card_name(self, card_id: str) -> str:
        """The card's id with its action, when this view saw the card."""
        asked = self._asked.get(card_id)
        return f"{inert(card_id)} ({asked})" if asked else inert(card_id)

    def _record(self, line: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')}  {line}"
        self.outcomes.append(stamped)
        self.query_one("#outcomes", Log).write_line(stamped)
