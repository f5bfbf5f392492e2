"""The live approvals view's link to its approver session, in a thread of its own.

It follows the :class:`~safeport.gateway_client.approver_session.ApproverSession` (cards pushed,
the gateway's restarts), lists the open sessions every few seconds, and carries out the
screen's answers and revocations on the same connection. Everything it learns is handed to the
screen as a :data:`News` value, so the screen never touches a socket.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from safeport.errors import Error
from safeport.gateway_client.approver_session import (
    ApproverSession,
    CardArrived,
    CardClosed,
    CardResult,
    attend_gateway,
)
from safeport.gateway_client.control_socket import GatewayRefused
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.results import SessionView
from safeport.vault.secrets import SecretBytes

SESSION_POLL_S = 2.0


@dataclass(frozen=True)
class Connected:
    again: bool  # True after a restart of the gateway


@dataclass(frozen=True)
class Disconnected:
    pass


@dataclass(frozen=True)
class HeldLocked:
    pass  # the gateway restarted with its vault locked: a human unlocks it, not this view


@dataclass(frozen=True)
class Answered:
    card_id: str
    approve: bool
    error: str | None = None


@dataclass(frozen=True)
class Sessions:
    sessions: list[SessionView] = field(default_factory=list)


@dataclass(frozen=True)
class Revoked:
    session_id: str
    error: str | None = None


@dataclass(frozen=True)
class Failed:
    message: str  # the view cannot go on (a wrong passphrase, no gateway at the start)


News = (
    Connected
    | Disconnected
    | HeldLocked
    | CardArrived
    | CardClosed
    | CardResult
    | Answered
    | Sessions
    | Revoked
    | Failed
)


class ApprovalLink:
    def __init__(
        self,
        paths: SafeportPaths,
        passphrase: SecretBytes,
        tell: Callable[[News], None],
        *,
        retry_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._paths = paths
        self._passphrase = passphrase
        self._tell = tell
        self._retry_s = retry_s
        self._clock = clock
        self._orders: queue.Queue[tuple[str, str, bool]] = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="approval-link", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake()
        self._thread.join(timeout=5)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def answer(self, card_id: str, approve: bool) -> None:
        self._orders.put(("answer", card_id, approve))
        self._wake()

    def revoke(self, session_id: str) -> None:
        self._orders.put(("revoke", session_id, False))
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _run(self) -> None:
        try:
            attend_gateway(
                self._paths,
                self._passphrase,
                self._serve,
                lost=lambda: self._tell(Disconnected()),
                held=lambda: self._tell(HeldLocked()),
                keep_going=lambda: not self._stopped.is_set(),
                sleep=self._stopped.wait,
                retry_s=self._retry_s,
                timeout=10,
                clock=self._clock,
            )
        except Error as exc:  # not running at the start, a wrong passphrase, an impostor
            self._tell(Failed(exc.diagnostic()))

    def _serve(self, session: ApproverSession, waiting: list[CardArrived], again: bool) -> None:
        self._tell(Connected(again=again))
        for arrived in waiting:
            self._tell(arrived)
        self._follow(session)

    def _follow(self, session: ApproverSession) -> None:
        sock = session.connection
        polled = 0.0
        while not self._stopped.is_set():
            self._drain(session)
            if self._clock() - polled >= SESSION_POLL_S:
                polled = self._clock()
                self._tell(Sessions(session.sessions()))
                self._drain(session)
            ready, _, _ = select.select([sock.fileno(), self._wake_r], [], [], 0.5)
            if sock.fileno() in ready:
                event = session.receive()
                if event is not None:
                    self._tell(event)
            if self._wake_r in ready:
                os.read(self._wake_r, 4096)
                self._carry_out(session)

    def _drain(self, session: ApproverSession) -> None:
        for event in session.pending():
            self._tell(event)

    def _carry_out(self, session: ApproverSession) -> None:
        while True:
            try:
                kind, target, approve = self._orders.get_nowait()
            except queue.Empty:
                return
            if kind == "answer":
                try:
                    session.decide(target, approve)
                except Error as exc:  # refused, or no key or no touch: nothing was approved
                    self._tell(Answered(target, approve, exc.message))
                else:
                    self._tell(Answered(target, approve))
            else:
                try:
                    session.revoke(target)
                except GatewayRefused as exc:
                    self._tell(Revoked(target, exc.message))
                else:
                    self._tell(Revoked(target))
