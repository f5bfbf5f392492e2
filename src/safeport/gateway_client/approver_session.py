"""A human approver on control.sock: registered with the passphrase, shown cards, answering.

`sp approvals watch` renders it two ways (line by line, and the live screen); both follow one
session: it registers as the approver, asks for the cards already waiting, turns what the
gateway pushes (a card, a card closed, what its action did) into :data:`ApproverEvent` values,
including the events that arrived while a reply was awaited, and carries the answers and
revocations. When the gateway stops (a restart, an upgrade), :func:`attend_gateway` waits for it
to listen again and registers again with the same passphrase, so the approver keeps its place.

Only the lock found at the start may be unlocked from here. A human who stops the gateway or
locks the vault expects it to stay locked until a human unlocks it, so every registration names
what ``status`` showed as ``run`` when the approver started (the gateway's run and its vault's
epoch), and the gateway unlocks only for that: after a restart or a lock the approver waits
while the vault is locked, says so, and registers again once someone has run `sp vault unlock`.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from safeport.gateway_client.approver_keys import sign_card
from safeport.gateway_client.control_socket import (
    GatewayClient,
    GatewayClosed,
    GatewayNotRunning,
    GatewayRefused,
)
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops
from safeport.shared.schemas.results import APPROVAL_EVENT, CardOpened, CardOutcome, SessionView
from safeport.shared.wire import PeerClosed, recv_message
from safeport.vault.secrets import SecretBytes


@dataclass(frozen=True)
class CardArrived:
    card: dict[str, Any]
    received_at: float  # when this side received it (monotonic): the card's time left counts


@dataclass(frozen=True)
class CardClosed:
    card_id: str
    outcome: str  # approved, denied, timeout, cancelled, voided


@dataclass(frozen=True)
class CardResult:
    """What an approved card's action did: done (with its status), refused or failed."""

    card_id: str
    outcome: str  # done, refused, failed
    detail: str


ApproverEvent = CardArrived | CardClosed | CardResult


class ApproverSession:
    """One registered approver on one connection."""

    def __init__(
        self,
        client: GatewayClient,
        *,
        clock: Callable[[], float] = time.monotonic,
        sign: Callable[[dict[str, object]], dict[str, str]] | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        # A yes to a card that names a key is signed by the approver's key (one touch).
        self._sign = sign or sign_with_enrolled_key
        self._keys: dict[str, dict[str, object]] = {}

    def register(
        self, passphrase: SecretBytes, *, unlock_run: str | None = None
    ) -> list[CardArrived]:
        """Prove the passphrase (after the listener check) and follow the cards; returns the
        ones already waiting. ``passphrase`` stays the caller's: a copy is sent. A locked
        vault is unlocked only if ``unlock_run`` names the gateway's current run; otherwise
        it stays locked (the gateway answers ``locked``)."""
        named = {} if unlock_run is None else {"unlock_run": unlock_run}
        self._client.call_with_passphrase(ops.APPROVER_REGISTER, passphrase.copy(), **named)
        first = self._client.call(ops.APPROVALS_WATCH)
        now = self._clock()
        return [self._arrived(card.model_dump(), now) for card in first.cards]

    @property
    def connection(self) -> socket.socket:
        """What to wait on (select) for the next pushed event."""
        return self._client.connection

    def settimeout(self, timeout: float | None) -> None:
        self._client.settimeout(timeout)

    def pending(self) -> list[ApproverEvent]:
        """Events pushed while a reply was awaited, in order; each is returned once."""
        return [e for e in map(self._event, self._client.take_pushed()) if e is not None]

    def receive(self) -> ApproverEvent | None:
        """Read one pushed message (call when :attr:`connection` is readable); None for one
        that is not an approver event. Raises :class:`GatewayClosed` when the gateway is gone."""
        try:
            message = recv_message(self._client.connection)
        except (PeerClosed, OSError) as exc:
            raise GatewayClosed() from exc
        return self._event(message)

    def decide(self, card_id: str, approve: bool) -> None:
        """Answer one card; the gateway's refusal (too late, unknown) is raised. A yes to a
        card that needs a security key is signed first (the key waits for a touch)."""
        key = self._keys.get(card_id) if approve else None
        if key is None:
            self._client.call(ops.APPROVALS_DECIDE, id=card_id, approve=approve)
            return
        assertion = self._sign(key)
        self._client.call(ops.APPROVALS_DECIDE, id=card_id, approve=True, assertion=assertion)

    def key_of(self, card_id: str) -> dict[str, object] | None:
        """What a yes to this card must have signed by a key (None: no key needed)."""
        return self._keys.get(card_id)

    def revoke(self, session_id: str) -> None:
        self._client.call(ops.SESSIONS_REVOKE, id=session_id)

    def sessions(self) -> list[SessionView]:
        """The open session grants."""
        return self._client.call(ops.SESSIONS_LIST).sessions

    def _event(self, message: dict[str, Any]) -> ApproverEvent | None:
        """A pushed approval event, or None for anything else: a malformed one is dropped
        whole (never shown in part as a card a human could answer)."""
        try:
            event = APPROVAL_EVENT.validate_python(message.get("result"))
        except ValidationError:
            return None
        if isinstance(event, CardOpened):
            return self._arrived(event.model_dump(), self._clock())
        if isinstance(event, CardOutcome):
            return CardResult(event.id, event.outcome, event.detail)
        self._keys.pop(event.id, None)
        return CardClosed(event.id, event.outcome)

    def _arrived(self, card: dict[str, Any], now: float) -> CardArrived:
        if isinstance(card.get("key"), dict):
            self._keys[str(card["id"])] = card["key"]
        return CardArrived(card, now)


def sign_with_enrolled_key(key: dict[str, object]) -> dict[str, str]:
    """Sign a card's challenge with the enrolled security key this process reaches."""
    return sign_card(key)


def attend_gateway(
    paths: SafeportPaths,
    passphrase: SecretBytes,
    serve: Callable[[ApproverSession, list[CardArrived], bool], None],
    *,
    lost: Callable[[], None],
    held: Callable[[], None] = lambda: None,
    keep_going: Callable[[], bool] = lambda: True,
    sleep: Callable[[float], object] = time.sleep,
    retry_s: float = 1.0,
    timeout: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Register and ``serve(session, waiting cards, again)`` until ``keep_going`` says stop.

    A gateway that is not running at the start is raised at once (the person should know);
    once one was served, its stop is reported by ``lost()`` (once per stop) and the session
    is opened again as soon as the gateway listens, without unlocking its vault: while it is
    locked ``held()`` says so (once per stop) and the registration is tried again. A refusal
    (a wrong passphrase, an impostor behind the socket) is raised: it is not a restart.
    """
    served_once = False
    connected = False
    told_held = False
    started_run: str | None = None  # the lock found at the start: the only one it may unlock
    while keep_going():
        try:
            with GatewayClient(paths, timeout=timeout) as client:
                session = ApproverSession(client, clock=clock)
                if started_run is None:
                    started_run = client.call(ops.STATUS).run
                waiting = _register(session, passphrase, started_run)
                if waiting is not None:
                    again, served_once, connected, told_held = served_once, True, True, False
                    serve(session, waiting, again)
                elif not told_held:
                    held()
                    told_held = True
        except GatewayNotRunning:
            if not served_once:
                raise
        except GatewayClosed:
            pass
        if not keep_going():
            return
        if connected:
            lost()
            connected = False
        sleep(retry_s)


def _register(
    session: ApproverSession, passphrase: SecretBytes, started_run: str
) -> list[CardArrived] | None:
    """The cards waiting, or None while the vault is locked for this registration: it names
    the run the approver started against, so after a restart (another run) it never unlocks."""
    try:
        return session.register(passphrase, unlock_run=started_run)
    except GatewayRefused as exc:
        if exc.code == "locked":
            return None
        raise
