"""Proving the vault passphrase on control.sock: who may, how often, and what a failure leaves.

A proof is refused from inside any connected agent's process tree. Every failed
proof is journaled with the peer's chain and answered after a delay that grows with the failures
in a row of the peer's uid (:mod:`passphrase_attempts`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from pydantic import SecretStr

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.core.vault_state import PassphraseRejected
from safeport.action_gateway.handlers.passphrase_attempts import PassphraseAttempts
from safeport.action_gateway.sockets.connection import Connection
from safeport.errors import Error
from safeport.vault.secrets import SecretBytes

log = logging.getLogger("safeport.gateway")

# The shortest turn a failed passphrase proof takes per uid: bounds online guessing to one a
# second however many connections guess at once, without holding anyone behind a failure's
# growing delay (only the guessing connection waits that out).
TURN_S = 1.0

InThread = Callable[[Callable[[], object]], Awaitable[object]]


class PassphraseProof:
    def __init__(
        self,
        core: GatewayCore,
        in_thread: InThread,
        attempts: PassphraseAttempts | None = None,
    ) -> None:
        self._core = core
        self._in_thread = in_thread
        self._attempts = attempts or PassphraseAttempts()

    async def prove(
        self,
        conn: Connection,
        op: str,
        passphrase: SecretStr | None,
        *,
        unlock: bool = True,
        at_epoch: int | None = None,
    ) -> None:
        """Prove ``passphrase`` (with ``unlock``, unlocking a locked vault with it, and with
        ``at_epoch`` only if the vault's epoch is still that one), or raise."""
        self._core.approvals.check_approver(conn.peer)
        secret = secret_of(passphrase)
        uid = conn.peer.uid
        # Journaled with an unlock it causes: which operation, and which process asked.
        by = {"op": op, "peer": conn.peer.as_record()}
        try:
            with conn.waiting():  # behind this uid's proof in progress
                await self._attempts.acquire(uid)
            turn_started = time.monotonic()
            rejected: PassphraseRejected | None = None
            delay = 0.0
            try:
                try:
                    await self._in_thread(
                        lambda: self._core.prove_passphrase(
                            secret, by, unlock=unlock, at_epoch=at_epoch
                        )
                    )
                except PassphraseRejected as exc:
                    failures, delay = self._attempts.failed(uid)
                    await self._journal_failure(conn, op, failures, delay)
                    rejected = exc
                    # At most one failed proof per uid per TURN_S, however many guess at once.
                    await asyncio.sleep(max(0.0, TURN_S - (time.monotonic() - turn_started)))
                else:
                    self._attempts.succeeded(uid)
            finally:
                self._attempts.release(uid)
            if rejected is not None:
                # Only the guessing connection waits out its delay: the next proof of this uid
                # (perhaps the human's) is not queued behind it.
                with conn.waiting():
                    await asyncio.sleep(delay)
                raise rejected
        finally:
            secret.wipe()

    async def _journal_failure(
        self, conn: Connection, op: str, failures: int, delay: float
    ) -> None:
        body: dict[str, object] = {
            "op": op,
            "peer": conn.peer.as_record(),
            "failures_in_a_row": failures,
            "delay_s": delay,
        }
        try:
            uid = conn.peer.uid
            # Whole within the uid's budget, then counted: one failure a second from each uid
            # would otherwise grow sessions.jsonl for as long as an agent keeps guessing.
            await self._in_thread(
                lambda: self._core.record_session_by(uid, "passphrase.rejected", body)
            )
        except Error as exc:  # the refusal stands; the delay still applies
            log.error("a failed passphrase proof could not be journaled: %s", exc.diagnostic())


def secret_of(passphrase: SecretStr | None) -> SecretBytes:
    """The passphrase as bytes the caller wipes; an operation that proves needs one."""
    if passphrase is None:
        raise Error("this operation needs the vault passphrase")
    return SecretBytes(passphrase.get_secret_value().encode("utf-8"))
