"""The gateway side of the live approvals view, in a thread of its own.

It registers as the approver, follows the pushed card events, lists the open sessions every
few seconds, and carries out the screen's answers and revocations on the same connection.
When the gateway stops it says so and registers again once it listens; everything it learns
is handed to the screen as a :data:`News` value, so the screen never touches a socket.
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
from typing import Any

from safeport.cli.gateway_client import GatewayClient, GatewayNotRunning, GatewayRefused
from safeport.errors import Error
from safeport.shared.paths import SafeportPaths
from safeport.shared.wire import PeerClosed, recv_message
from safeport.vault.secrets import SecretBytes

SESSION_POLL_S = 2.0


@dataclass(frozen=True)
class Connected:
    again: bool  # True after a restart of the gateway


@dataclass(frozen=True)
class Disconnected:
    pass


@dataclass(frozen=True)
class CardArrived:
    card: dict[str, Any]
    received_at: float


@dataclass(frozen=True)
class CardClosed:
    card_id: str
    outcome: str


@dataclass(frozen=True)
class Answered:
    card_id: str
    approve: bool
    error: str | None = None


@dataclass(frozen=True)
class Sessions:
    sessions: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Revoked:
    session_id: str
    error: str | None = None


@dataclass(frozen=True)
class Failed:
    message: str  # the view cannot go on (a wrong passphrase, no gateway at the start)


News = Connected | Disconnected | CardArrived | CardClosed | Answered | Sessions | Revoked | Failed


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
        connected_once = False
        while not self._stopped.is_set():
            try:
                with GatewayClient(self._paths, timeout=10) as client:
                    client.call_with_passphrase("approver.register", self._passphrase.copy())
                    first = client.call("approvals.watch")
                    self._tell(Connected(again=connected_once))
                    connected_once = True
                    now = self._clock()
                    for card in first.get("cards", []):
                        self._tell(CardArrived(card, now))
                    self._follow(client)
            except GatewayNotRunning as exc:
                if not connected_once:
                    self._tell(Failed(exc.diagnostic()))
                    return
            except GatewayRefused as exc:
                self._tell(Failed(exc.diagnostic()))
                return
            except Error:
                pass  # the connection ended: the gateway stopped or restarts
            if self._stopped.is_set():
                return
            if connected_once:
                self._tell(Disconnected())
            self._stopped.wait(self._retry_s)

    def _follow(self, client: GatewayClient) -> None:
        sock = client.connection
        polled = 0.0
        while not self._stopped.is_set():
            self._drain(client)
            if self._clock() - polled >= SESSION_POLL_S:
                polled = self._clock()
                self._tell(Sessions(list(client.call("sessions.list").get("sessions", []))))
                self._drain(client)
            ready, _, _ = select.select([sock.fileno(), self._wake_r], [], [], 0.5)
            if sock.fileno() in ready:
                try:
                    message = recv_message(sock)
                except (PeerClosed, OSError) as exc:
                    raise Error("the gateway closed the connection") from exc
                self._on_event(message.get("result") or {})
            if self._wake_r in ready:
                os.read(self._wake_r, 4096)
                self._carry_out(client)

    def _drain(self, client: GatewayClient) -> None:
        pushed, client.backlog = client.backlog, []
        for message in pushed:
            self._on_event(message.get("result") or {})

    def _on_event(self, event: dict[str, Any]) -> None:
        if event.get("event") == "card":
            self._tell(CardArrived(event, self._clock()))
        elif event.get("event") == "card.closed":
            self._tell(CardClosed(str(event.get("id")), str(event.get("outcome"))))

    def _carry_out(self, client: GatewayClient) -> None:
        while True:
            try:
                kind, target, approve = self._orders.get_nowait()
            except queue.Empty:
                return
            if kind == "answer":
                try:
                    client.call("approvals.decide", id=target, approve=approve)
                except GatewayRefused as exc:
                    self._tell(Answered(target, approve, exc.message))
                else:
                    self._tell(Answered(target, approve))
            else:
                try:
                    client.call("sessions.revoke", id=target)
                except GatewayRefused as exc:
                    self._tell(Revoked(target, exc.message))
                else:
                    self._tell(Revoked(target))
