"""What every control.sock operation works with: the core, the human's worker pool, the
passphrase proof, and which connections are approvers or watch for cards."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from pydantic import SecretStr

from safeport.action_gateway.approvals.broker import Listener
from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.handlers.passphrase_attempts import PassphraseAttempts
from safeport.action_gateway.handlers.passphrase_proof import PassphraseProof
from safeport.action_gateway.sockets.connection import Connection

Result = TypeVar("Result")


class ControlContext:
    def __init__(
        self,
        core: GatewayCore,
        pool: Executor,
        request_stop: Callable[[], None],
        attempts: PassphraseAttempts | None = None,
    ) -> None:
        self.core = core
        self.request_stop = request_stop
        self._pool = pool
        self._proof = PassphraseProof(core, self.in_thread, attempts)
        self._approvers: set[int] = set()
        self._watchers: dict[int, Listener] = {}
        self.policy_accepting = asyncio.Lock()

    async def in_thread(self, func: Callable[[], Result]) -> Result:
        """Blocking work (KDFs, fsyncs) off the loop, on the human's own small pool."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, func)

    async def prove(
        self,
        conn: Connection,
        op: str,
        passphrase: SecretStr | None,
        *,
        unlock: bool = True,
        at_epoch: int | None = None,
    ) -> None:
        await self._proof.prove(conn, op, passphrase, unlock=unlock, at_epoch=at_epoch)

    def is_approver(self, conn: Connection) -> bool:
        return id(conn) in self._approvers

    def make_approver(self, conn: Connection) -> None:
        self._approvers.add(id(conn))

    def sees_only_its_own(self, conn: Connection) -> bool:
        """With several humans served, a connection that has not proved the passphrase sees
        only its own uid's cards and sessions. One human: nothing changes."""
        return self.core.serves_several_humans and not self.is_approver(conn)

    async def for_everyone(self, conn: Connection, op: str, passphrase: SecretStr | None) -> None:
        """Operations that end every human's work (stop, lock, another's session) need the
        passphrase when the gateway serves several humans: being admitted is not enough."""
        if self.sees_only_its_own(conn):
            # Authority only: a stop, a lock or a revocation never unlocks the vault.
            await self.prove(conn, op, passphrase, unlock=False)

    def watch(self, conn: Connection, listener: Listener) -> None:
        """This connection's card events go to ``listener`` (one watch per connection)."""
        self.unwatch(conn)
        self._watchers[id(conn)] = listener
        self.core.approvals.watch_cards(listener)

    def unwatch(self, conn: Connection) -> None:
        listener = self._watchers.pop(id(conn), None)
        if listener is not None:
            self.core.approvals.unwatch_cards(listener)

    def forget(self, conn: Connection) -> None:
        """The connection closed."""
        self._approvers.discard(id(conn))
        self.unwatch(conn)
