"""`sp approvals watch`'s loop: one card at a time, with the time left, until the gateway closes.

The prompt listens to the human and to the gateway at once (``select`` on both), so a card that
expires or that its requester withdraws is cleared from the screen when it happens, with a
sentence saying so, instead of waiting for an answer nobody can use. An answer that arrives too
late is a sentence, never a traceback. Reading stdin is done on the raw descriptor: a buffered
reader could hold a typed line that ``select`` no longer sees.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from safeport.cli.cards.card_text import card_lines, outcome_text, readable_at
from safeport.errors import Error
from safeport.gateway_client.approver_session import (
    ApproverEvent,
    ApproverSession,
    CardArrived,
    CardResult,
    attend_gateway,
)
from safeport.gateway_client.control_socket import GatewayClosed, GatewayRefused
from safeport.shared.paths import SafeportPaths
from safeport.shared.visible_text import inert
from safeport.vault.secrets import SecretBytes

# Reminders of the time left, in seconds, while a card waits for its answer.
REMINDERS = (60, 30, 10)
# Keys pressed this soon after a card appears were meant for what was on screen before it.
GRACE_S = 1.5
_CLOSED = {
    "timeout": "expired: nobody answered in time; nothing runs",
    "cancelled": "was withdrawn by its requester; nothing runs",
    "voided": "was voided (the vault was locked); nothing runs",
}


class InputEnded(Error):
    """The watch's input ended (a pipe closed, Ctrl-D on a terminal): nobody can answer."""

    exit_code = 3

    def __init__(self, *, card_waiting: bool = False) -> None:
        expires = "; the card shown expires unanswered and nothing runs" if card_waiting else ""
        super().__init__(f"the input ended, so nobody can answer cards: the watch stops{expires}")


@dataclass
class _Current:
    card: dict[str, Any]
    deadline: float
    shown_at: float
    reminded: set[int] = field(default_factory=set)
    readable: bool = True  # shown exactly at the terminal's width (see card_text.readable_at)


class ApproverPrompt:
    def __init__(
        self,
        session: ApproverSession,
        write: Callable[[str], None],
        *,
        stdin_fd: int = 0,
        width: int | Callable[[], int] = 80,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._session = session
        self._write = write
        self._stdin = stdin_fd
        # Measured again for each card: a terminal made narrower since the start would wrap the
        # card's lines itself, where no mark shows it.
        self._width = width if callable(width) else lambda: width
        self._clock = clock
        self._queue: deque[tuple[float, dict[str, Any]]] = deque()  # (received at, card)
        self._current: _Current | None = None
        self._typed = b""

    def run(self, cards: list[CardArrived]) -> None:
        """Answer cards as they come; return when the gateway closes the connection."""
        now = self._clock()
        self._queue.extend((now, arrived.card) for arrived in cards)
        while True:
            self._drain_backlog()
            if self._current is None:
                self._next_card()
            if not self._wait_for_gateway(self._stdin):
                return
            self._remind()

    # -- the gateway ----------------------------------------------------------------------------

    def _wait_for_gateway(self, stdin: int) -> bool:
        """Wait up to a second for an event or a typed line; False once the gateway is gone."""
        sock = self._session.connection
        ready, _, _ = select.select([sock.fileno(), stdin], [], [], 1.0)
        if sock.fileno() in ready:
            try:
                event = self._session.receive()
            except GatewayClosed:
                self._say("the gateway closed the connection")
                return False
            if event is not None:
                self._on_event(event)
        if stdin in ready:
            self._on_input()
        return True

    def _drain_backlog(self) -> None:
        for event in self._session.pending():
            self._on_event(event)

    def _on_event(self, event: ApproverEvent) -> None:
        if isinstance(event, CardArrived):
            self._queue.append((event.received_at, event.card))
            return
        if isinstance(event, CardResult):
            self._say(
                f"card {inert(event.card_id)}: {inert(outcome_text(event.outcome, event.detail))}"
            )
            return
        card_id = event.card_id
        self._queue = deque(item for item in self._queue if str(item[1].get("id")) != card_id)
        current = self._current
        if current is not None and str(current.card.get("id")) == card_id:
            why = _CLOSED.get(event.outcome)
            if why is not None:  # approved/denied: this prompt (or another approver) answered
                self._say(f"\ncard {inert(card_id)} {why}")
                self._forget_typing()
                self._current = None

    # -- the human ------------------------------------------------------------------------------

    def _next_card(self) -> None:
        while self._queue:
            received, card = self._queue.popleft()
            now = self._clock()
            # The time left counts from when the gateway sent the card, not from now.
            deadline = received + int(card.get("expires_in_s") or 0)
            left = round(deadline - now)
            if left <= 0:
                continue
            # Reminders only for marks the card still has to reach.
            self._current = _Current(card, deadline, now, {m for m in REMINDERS if m >= left})
            self._forget_typing()  # keys pressed before this card was shown are not its answer
            self._show(self._current)
            if not card.get("showable", True):
                self._decide(False)
                continue
            self._prompt()
            return

    def _show(self, current: _Current, *, whole_chain: bool = False) -> None:
        width = self._width()
        current.readable = readable_at(width)
        current.shown_at = self._clock()
        hint = "" if whole_chain else "c shows the whole chain"
        lines = card_lines(current.card, width=width, whole_chain=whole_chain, unfold_hint=hint)
        self._say("\n".join(lines))

    def _prompt(self) -> None:
        if self._current is not None:
            self._write(f"approve? [y/n] ({self._left()} s left; c: the whole chain) ")

    def _remind(self) -> None:
        current = self._current
        if current is None:
            return
        left = self._left()
        due = [mark for mark in REMINDERS if left <= mark and mark not in current.reminded]
        if due:
            current.reminded.update(mark for mark in REMINDERS if left <= mark)
            self._say(f"\n{left} s left to answer card {inert(str(current.card.get('id')))}")
            self._prompt()

    def _on_input(self) -> None:
        chunk = os.read(self._stdin, 4096)
        if not chunk:
            # Nobody can answer any more: a watch left running on an ended input would only
            # hold the passphrase, so it stops (a card waiting expires: nothing runs).
            raise InputEnded(card_waiting=self._current is not None)
        if self._current is None:
            # An answer typed while no card waits belongs to no card: it must never be taken
            # as the answer to the next one.
            self._typed = b""
            self._say("no card is waiting; that input was ignored")
            return
        if self._clock() - self._current.shown_at < GRACE_S:
            # Typed as the card changed: it may answer the card that was there a moment ago.
            self._forget_typing()
            self._say("input ignored: this card was just shown; read it, then answer")
            self._prompt()
            return
        self._typed += chunk
        while b"\n" in self._typed and self._current is not None:
            line, _, self._typed = self._typed.partition(b"\n")
            answer = line.decode("utf-8", "replace").strip().lower()
            if answer in ("y", "yes") and not self._current.readable:
                # A yes needs the card read exactly; show it again if the terminal is wider now.
                self._show(self._current)
                if not self._current.readable:
                    self._say("y ignored: widen the terminal to read the card, then answer")
                self._forget_typing()  # what follows was typed before the card was shown again
                self._prompt()
                return
            if answer in ("c", "chain"):
                # The card again, every process of the chain whole (digests, scripts).
                self._show(self._current, whole_chain=True)
                self._forget_typing()
                self._prompt()
                return
            if answer in ("y", "yes"):
                self._decide(True)
            elif answer in ("n", "no"):
                self._decide(False)
            else:  # no default: an action runs, or not, only on a word a person typed
                self._say("answer y or n (c shows the whole chain)")
                self._prompt()

    def _decide(self, approve: bool) -> None:
        current = self._current
        if current is None:
            return
        self._current = None
        card_id = str(current.card.get("id"))
        if approve and self._session.key_of(card_id) is not None:
            self._say(
                f"touch your security key now: it signs card {inert(card_id)} and nothing else"
            )
        try:
            self._session.decide(card_id, approve)
        except GatewayRefused as exc:
            self._say(f"not recorded: {inert(exc.message)} (too late for card {inert(card_id)})")
            return
        except Error as exc:  # no key, or no touch: nothing was approved
            self._say(f"not approved: {inert(exc.diagnostic())}")
            self._current = current  # the card still waits: it can be answered again
            self._forget_typing()
            self._prompt()
            return
        self._say("approved" if approve else "denied")

    def _left(self) -> int:
        current = self._current
        return max(0, round(current.deadline - self._clock())) if current is not None else 0

    def _forget_typing(self) -> None:
        """A half-typed answer belongs to the card that is gone, not to the next one."""
        self._typed = b""
        if os.isatty(self._stdin):
            with contextlib.suppress(termios.error):
                termios.tcflush(self._stdin, termios.TCIFLUSH)

    def _say(self, text: str) -> None:
        self._write(text + "\n")


def stdout_writer(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def watch_until_stopped(
    paths: SafeportPaths,
    passphrase: SecretBytes,
    write: Callable[[str], None],
    *,
    width: int | Callable[[], int] = 80,
    retry_s: float = 1.0,
    stdin_fd: int = 0,
    keep_going: Callable[[], bool] = lambda: True,
) -> None:
    """Register as the approver and answer cards; when the gateway stops (a restart, an
    upgrade), say so, wait for it to listen again, register again and go on. The vault of the
    new run is never unlocked from here: while it is locked, say so and wait for a human to
    unlock it. An ended input stops the watch (:class:`InputEnded`), waiting or not."""

    def serve(session: ApproverSession, waiting: list[CardArrived], again: bool) -> None:
        session.settimeout(None)
        if again:
            write("reconnected to the gateway; watching again\n")
        else:
            write("watching for approval cards (Ctrl-C to stop)\n")
        ApproverPrompt(session, write, width=width, stdin_fd=stdin_fd).run(waiting)

    def lost() -> None:
        write("the gateway stopped; waiting for it to start again (Ctrl-C to stop)\n")

    def held() -> None:
        write(
            "the gateway restarted; its vault stays locked until a human runs "
            "`sp vault unlock` (this watch does not unlock it); watching resumes then\n"
        )

    def sleep(seconds: float) -> None:
        """Wait between attempts, but stop at once if the input ends meanwhile."""
        ready, _, _ = select.select([stdin_fd], [], [], seconds)
        if ready and not os.read(stdin_fd, 4096):
            raise InputEnded()

    sleep(0)  # an input that ended before the start: nobody could answer, so nothing attaches
    attend_gateway(
        paths,
        passphrase,
        serve,
        lost=lost,
        held=held,
        keep_going=keep_going,
        sleep=sleep,
        retry_s=retry_s,
    )
