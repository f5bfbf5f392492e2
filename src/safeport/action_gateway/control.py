"""control.sock: what `sp` asks of the gateway (vault, policy, approvals, sessions, lifecycle).

Only operations that prove the vault passphrase count as human activity for auto-lock, so an
agent polling `status` cannot keep the vault open. Operations that carry a passphrase or decide a
card are refused from inside any connected agent's process tree (DESIGN.md §8). Every failed
passphrase proof is journaled with the peer's chain and answered after a delay that grows with
the failures in a row of the peer's uid (:mod:`passphrase_attempts`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import TypeAdapter

from safeport.action_gateway.approver_rules import ApproverRefused, check_approver
from safeport.action_gateway.core import GatewayCore
from safeport.action_gateway.identity import PeerIdentity
from safeport.action_gateway.passphrase_attempts import PassphraseAttempts
from safeport.action_gateway.server import Connection, Handler, ok_reply, readable_id, schema_error
from safeport.action_gateway.vault_state import GatewayLocked, PassphraseRejected
from safeport.errors import Error
from safeport.shared.schemas.wire import ControlRequest, ErrorCode
from safeport.vault.secrets import SecretBytes

_CONTROL = TypeAdapter(ControlRequest)
log = logging.getLogger("safeport.gateway")

# The shortest turn a failed passphrase proof takes per uid: bounds online guessing to one a
# second however many connections guess at once, without holding anyone behind a failure's
# growing delay (only the guessing connection waits that out).
TURN_S = 1.0
MAX_PASSPHRASE_CHARS = 4096
MAX_POLICY_CHARS = 1024 * 1024

Op = Callable[[Connection, ControlRequest], Awaitable[dict[str, Any]]]


class ControlHandler(Handler):
    def __init__(
        self,
        core: GatewayCore,
        request_stop: Callable[[], None],
        attempts: PassphraseAttempts | None = None,
    ) -> None:
        self._core = core
        self._attempts = attempts or PassphraseAttempts()
        self._request_stop = request_stop
        self._approvers: set[int] = set()
        self._watchers: dict[int, Callable[[str, dict[str, object]], None]] = {}
        self._ops: dict[str, Op] = {
            "status": self._status,
            "gateway.stop": self._stop,
            "gateway.reload": self._reload,
            "vault.status": self._vault_status,
            "vault.describe": self._vault_describe,
            "vault.init": self._vault_init,
            "vault.unlock": self._vault_unlock,
            "vault.lock": self._vault_lock,
            "vault.unlock_keyring": self._vault_unlock_keyring,
            "vault.entries": self._vault_entries,
            "vault.add": self._vault_add,
            "vault.rotate": self._vault_rotate,
            "vault.remove": self._vault_remove,
            "policy.status": self._policy_status,
            "policy.accept": self._policy_accept,
            "approver.register": self._approver_register,
            "approvals.list": self._approvals_list,
            "approvals.decide": self._approvals_decide,
            "approvals.watch": self._approvals_watch,
            "sessions.list": self._sessions_list,
            "sessions.revoke": self._sessions_revoke,
            "audit.checkpoint": self._audit_checkpoint,
        }

    async def closed(self, conn: Connection) -> None:
        self._approvers.discard(id(conn))
        listener = self._watchers.pop(id(conn), None)
        if listener is not None:
            self._core.approvals.unsubscribe(listener)

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        request, problem = schema_error(_CONTROL, data)
        if problem is not None:
            conn.junk["schema"] += 1
            await conn.send_error(readable_id(data), "invalid", problem)
            return
        op = self._ops.get(request.op)
        if op is None:
            await conn.send_error(request.id, "invalid", "unknown control operation")
            return
        try:
            result = await op(conn, request)
        except Error as exc:
            code = _code_for(exc)
            await conn.send_error(request.id, code, exc.diagnostic())
            return
        await conn.send(ok_reply(request.id, result))

    # -- helpers ------------------------------------------------------------------------------

    async def _in_thread(self, func: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._core.control_pool, func)

    def _refuse_agent_tree(self, peer: PeerIdentity) -> None:
        for requester in list(self._core.agent_peers.values()):
            check_approver(
                peer, requester, allow_in_client=self._core.settings().allow_approver_in_client
            )

    def _sees_only_its_own(self, conn: Connection) -> bool:
        """With several humans served, a connection that has not proved the passphrase sees
        only its own uid's cards and sessions. One human: nothing changes."""
        return len(self._core.admitted_uids) > 1 and id(conn) not in self._approvers

    async def _for_everyone(self, conn: Connection, request: ControlRequest) -> None:
        """Operations that end every human's work (stop, lock, another's session) need the
        passphrase when the gateway serves several humans: being admitted is not enough."""
        if self._sees_only_its_own(conn):
            await self._prove(conn, request)

    async def _prove(self, conn: Connection, request: ControlRequest) -> None:
        """Prove the passphrase in ``params`` (unlocking a locked vault with it)."""
        self._refuse_agent_tree(conn.peer)
        secret = _passphrase(request.params)
        uid = conn.peer.uid
        try:
            with conn.waiting():  # behind this uid's proof in progress
                await self._attempts.acquire(uid)
            turn_started = time.monotonic()
            rejected: PassphraseRejected | None = None
            delay = 0.0
            try:
                try:
                    await self._in_thread(lambda: self._core.vault.prove(secret))
                except PassphraseRejected as exc:
                    failures, delay = self._attempts.failed(uid)
                    await self._journal_failure(conn, request.op, failures, delay)
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
            await self._in_thread(lambda: self._core.record_session("passphrase.rejected", body))
        except Error as exc:  # the refusal stands; the delay still applies
            log.error("a failed passphrase proof could not be journaled: %s", exc.diagnostic())

    # -- operations ---------------------------------------------------------------------------

    async def _status(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        return self._core.status()

    async def _stop(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        await self._for_everyone(conn, request)
        self._request_stop()
        return {"stopping": True}

    async def _reload(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        return dict(await self._in_thread(self._core.reload))

    async def _vault_status(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        return {"vault": "unlocked" if self._core.vault.unlocked else "locked"}

    async def _vault_describe(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        return {
            **await self._in_thread(self._core.describe_vault),
            "vault": "unlocked" if self._core.vault.unlocked else "locked",
        }

    async def _vault_init(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        """Create the vault: the first human to set a passphrase owns it, so the request is
        refused from an agent's process tree, like every other passphrase-carrying one."""
        self._refuse_agent_tree(conn.peer)
        secret = _passphrase(request.params)
        try:
            keys = await self._in_thread(lambda: self._core.create_vault(secret))
        finally:
            secret.wipe()
        return {
            "audit_x25519": base64.b64encode(keys.audit_x25519).decode("ascii"),
            "checkpoint_ed25519": base64.b64encode(keys.checkpoint_ed25519).decode("ascii"),
        }

    async def _vault_unlock(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        await self._prove(conn, request)
        return {"vault": "unlocked", "policy": self._core.policies.status(), **self._public_file()}

    async def _vault_unlock_keyring(
        self, conn: Connection, request: ControlRequest
    ) -> dict[str, Any]:
        changed = await self._in_thread(self._core.vault.unlock_with_keyring)
        return {"vault": "unlocked", "changed": bool(changed), **self._public_file()}

    async def _vault_entries(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        vault, _ = self._core.vault.current()
        return {
            "entries": [
                {
                    "name": entry.name,
                    "kind": entry.kind,
                    "created": entry.created.isoformat(),
                    "rotated": entry.rotated.isoformat() if entry.rotated else None,
                }
                for entry in vault.entries()
            ]
        }

    async def _vault_add(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        name, kind = request.params.get("name"), request.params.get("kind")
        if not isinstance(name, str) or kind not in ("token", "basic", "ssh-key"):
            raise Error("vault.add needs `name` and `kind` (token, basic or ssh-key)")
        value = _entry_value(request.params.get("value"))
        await self._prove(conn, request)

        def add() -> None:
            vault, _ = self._core.vault.current()
            vault.add(name, kind, value)
            self._core.record_vault_save("vault.entry_added", {"name": name, "kind": kind}, vault)

        await self._in_thread(add)
        return {"added": name}

    async def _vault_rotate(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        name = request.params.get("name")
        if not isinstance(name, str):
            raise Error("vault.rotate needs `name`")
        value = _entry_value(request.params.get("value"))
        await self._prove(conn, request)

        def rotate() -> None:
            vault, _ = self._core.vault.current()
            vault.rotate(name, value)
            # Pooled connections authenticated with the old value must not outlive it.
            self._core.parts.executor.close_all()
            self._core.record_vault_save("vault.entry_rotated", {"name": name}, vault)

        await self._in_thread(rotate)
        return {"rotated": name}

    async def _vault_remove(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        name = request.params.get("name")
        if not isinstance(name, str):
            raise Error("vault.remove needs `name`")
        await self._prove(conn, request)

        def remove() -> None:
            vault, _ = self._core.vault.current()
            vault.remove(name)
            self._core.parts.executor.close_all()
            self._core.record_vault_save("vault.entry_removed", {"name": name}, vault)

        await self._in_thread(remove)
        return {"removed": name}

    def _public_file(self) -> dict[str, Any]:
        try:
            vault, _ = self._core.vault.current()
        except Error:
            return {}
        state = getattr(vault, "public_file_state", None)
        return {"public_file": state()} if callable(state) else {}

    async def _vault_lock(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        await self._for_everyone(conn, request)
        locked = await self._in_thread(lambda: self._core.vault.lock("sp vault lock"))
        return {"vault": "locked", "changed": bool(locked)}

    async def _policy_status(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        served = self._core.policies.served
        current = self._core.policies.read_file()
        return {
            **self._core.policies.status(),
            "served_text": served.text if served else None,
            "file_text": current.text,
        }

    async def _policy_accept(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        shown = request.params.get("digest")
        if not isinstance(shown, str):
            raise Error("policy.accept needs the digest of the text that was shown")
        # In dedicated mode the text comes from the human's own gateway.toml (the gateway's
        # account cannot read their home); it is accepted only if it is the text shown.
        text = request.params.get("text")
        if text is not None and (not isinstance(text, str) or len(text) > MAX_POLICY_CHARS):
            raise Error("policy.accept's text must be the policy's TOML (at most 1 MiB)")
        await self._prove(conn, request)

        def accept() -> dict[str, Any]:
            vault, _ = self._core.vault.current()
            served = self._core.policies.accept(vault, shown, text=text)
            self._core.record_vault_save("policy.accepted", {"policy": served.digest}, vault)
            return {"policy": served.digest}

        return dict(await self._in_thread(accept))

    async def _approver_register(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        await self._prove(conn, request)
        self._approvers.add(id(conn))
        await self._in_thread(
            lambda: self._core.record_session(
                "approver.started", {"approver": conn.peer.as_record()}
            )
        )
        return {"approver": True}

    async def _approvals_list(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        cards = self._core.approvals.card_views()
        if self._sees_only_its_own(conn):
            # A card holds the requester's process chain, scripts and injected variables: facts
            # about another human's processes that only a proven approver is shown.
            cards = [card for card in cards if _card_uid(card) == conn.peer.uid]
        return {"cards": cards}

    async def _approvals_decide(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        card_id = request.params.get("id")
        approve = request.params.get("approve")
        if not isinstance(card_id, str) or not isinstance(approve, bool):
            raise Error("approvals.decide needs `id` (string) and `approve` (true/false)")
        if id(conn) not in self._approvers:
            await self._prove(conn, request)
        core = self._core
        settings = core.settings()
        card = await self._in_thread(
            lambda: core.approvals.decide(
                card_id, approve, conn.peer, allow_in_client=settings.allow_approver_in_client
            )
        )
        core.vault.touch()
        return {"id": card.id, "approved": approve}

    async def _approvals_watch(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        if id(conn) not in self._approvers:
            raise ApproverRefused("register as an approver first (prove the passphrase)")
        loop = asyncio.get_running_loop()
        watch_id = request.id

        def listener(event: str, data: dict[str, object]) -> None:
            # Its own id: an event sent before the watch reply must not be taken for it.
            message = ok_reply(f"{watch_id}:event", {"event": event, **data})
            with contextlib.suppress(RuntimeError):  # the loop is closing
                loop.call_soon_threadsafe(lambda: _spawn(conn, message))

        old = self._watchers.pop(id(conn), None)
        if old is not None:
            self._core.approvals.unsubscribe(old)
        self._watchers[id(conn)] = listener
        self._core.approvals.subscribe(listener)
        conn.subscribe()  # stays open while it waits for cards
        return {
            "event": "watching",
            "cards": self._core.approvals.card_views(),
        }

    async def _sessions_list(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        now = time.monotonic()
        grants = self._core.approvals.sessions()
        if self._sees_only_its_own(conn):
            grants = [grant for grant in grants if grant.requester.uid == conn.peer.uid]
        return {"sessions": [grant.view(now) for grant in grants]}

    async def _sessions_revoke(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        session_id = request.params.get("id")
        if not isinstance(session_id, str):
            raise Error("sessions.revoke needs `id`")
        owner = next(
            (g.requester.uid for g in self._core.approvals.sessions() if g.id == session_id), None
        )
        if owner != conn.peer.uid:
            await self._for_everyone(conn, request)  # another human's session, or none
        grant = await self._in_thread(
            lambda: self._core.approvals.revoke(session_id, by=f"pid {conn.peer.pid}")
        )
        return {"revoked": grant.id}

    async def _audit_checkpoint(self, conn: Connection, request: ControlRequest) -> dict[str, Any]:
        await self._in_thread(self._core.checkpoint)
        return self._core.checkpoint_view()


def _card_uid(card: dict[str, Any]) -> object:
    user = card.get("user")
    return user.get("uid") if isinstance(user, dict) else None


def _passphrase(params: dict[str, Any]) -> SecretBytes:
    value = params.get("passphrase")
    if not isinstance(value, str) or not value or len(value) > MAX_PASSPHRASE_CHARS:
        raise Error("this operation needs the vault passphrase")
    return SecretBytes(value.encode("utf-8"))


def _entry_value(raw: object) -> dict[str, SecretBytes | str]:
    """A credential value as sent by `sp vault add/rotate`: secret fields base64, text plain."""
    if not isinstance(raw, dict) or not raw or len(raw) > 8:
        raise Error("the credential value is missing or malformed")
    value: dict[str, SecretBytes | str] = {}
    for field, item in raw.items():
        if not isinstance(field, str) or not isinstance(item, dict) or len(item) != 1:
            raise Error("the credential value is malformed")
        if isinstance(item.get("secret_b64"), str):
            try:
                value[field] = SecretBytes(base64.b64decode(item["secret_b64"], validate=True))
            except (ValueError, binascii.Error):
                raise Error("the credential value is malformed") from None
        elif isinstance(item.get("text"), str):
            value[field] = str(item["text"])
        else:
            raise Error("the credential value is malformed")
    return value


def _code_for(exc: Error) -> ErrorCode:
    if isinstance(exc, GatewayLocked):
        return "locked"
    return "denied" if exc.exit_code == 1 else "invalid"


def _spawn(conn: Connection, message: dict[str, Any]) -> None:
    task = asyncio.ensure_future(conn.send(message))
    conn.tasks.add(task)
    task.add_done_callback(conn.tasks.discard)
