"""The decision ladder (DESIGN.md §6) for one proposal, with every collaborator injected.

Rungs, in order; the first that refuses ends the proposal and nothing past it is touched:

1. frame, JSON and schema (the server, before this module) → ``invalid``
2. peer identity unchanged since connect → ``denied``
3. caller rules → ``denied``
4. action named in the accepted policy, arguments valid, rate cap → ``denied``
5. vault unlocked → ``locked``
6. approval (session grant or a card) → ``denied`` / ``timeout``
7. durable intent record → ``unavailable``
8. execute with the credential injected here → ``upstream`` / ``denied``
9. filter the result; durable outcome record → ``unavailable`` ("do not retry automatically")

Every refusal is a :class:`Refusal` carrying its wire code, rung and category, and is journaled
before the reply is sent. Reasons are fixed sentences with names from the policy, never the
agent's raw values.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from safeport.action_gateway.approvals import (
    ApprovalRefused,
    Approvals,
    ApprovalTimedOut,
    Grant,
)
from safeport.action_gateway.arguments import ArgumentRejected, validate_args
from safeport.action_gateway.callers import CallerRefused, check_caller
from safeport.action_gateway.cards import ActionRequest
from safeport.action_gateway.executors.interface import (
    ActionError,
    Executor,
    HttpAction,
    SshAction,
)
from safeport.action_gateway.executors.prepare import prepare_http, prepare_ssh
from safeport.action_gateway.identity import IdentityProbe, PeerIdentity
from safeport.action_gateway.policy_store import ServedPolicy
from safeport.action_gateway.vault_state import VaultState
from safeport.errors import Denied, Error
from safeport.shared.audit import JournalHead
from safeport.shared.schemas.config import ParamSpec
from safeport.shared.schemas.wire import (
    ErrorCode,
    HttpResult,
    ProposeHttp,
    ProposeSsh,
    SshExecResult,
)
from safeport.vault.errors import VaultLocked
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret

Proposal = ProposeSsh | ProposeHttp


class Refusal(Error):
    """A proposal stopped on a rung; ``code`` goes on the wire, ``category`` into the journal."""

    exit_code = 1

    def __init__(self, code: ErrorCode, rung: int, category: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.rung = rung
        self.category = category


class ActionJournal(Protocol):
    def record(
        self, kind: str, body: dict[str, object], *, ref: dict[str, int] | None = None
    ) -> JournalHead: ...


class PolicySource(Protocol):
    @property
    def served(self) -> ServedPolicy | None: ...

    def pending_declares(self, kind: str, target: str, action: str) -> bool:
        """Whether an edited, not yet accepted gateway.toml declares this action."""
        ...


class RateLimiter:
    """A sliding one-minute window per credential (``rate_per_minute``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, deque[float]] = {}

    def take(self, credential: str, per_minute: int | None) -> None:
        if per_minute is None:
            return
        now = self._clock()
        with self._lock:
            window = self._seen.setdefault(credential, deque())
            while window and now - window[0] >= 60.0:
                window.popleft()
            if len(window) >= per_minute:
                raise Denied(f"credential {credential} is over its cap of {per_minute} per minute")
            window.append(now)


@dataclass(frozen=True)
class Resolved:
    """A proposal resolved against the accepted policy and prepared (rung 4's product)."""

    request: ActionRequest
    max_output_bytes: int

    @property
    def action(self) -> SshAction | HttpAction:
        return self.request.prepared


class Ladder:
    def __init__(
        self,
        *,
        probe: IdentityProbe,
        policies: PolicySource,
        vault: VaultState,
        approvals: Approvals,
        journal: ActionJournal,
        executor: Executor,
        rates: RateLimiter,
        admitted_uids: frozenset[int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe = probe
        self._policies = policies
        self._vault = vault
        self._approvals = approvals
        self._journal = journal
        self._executor = executor
        self._rates = rates
        self._admitted = admitted_uids
        self._clock = clock

    def propose(
        self, peer: PeerIdentity, proposal: Proposal, cancel: threading.Event | None = None
    ) -> dict[str, object]:
        """Run rungs 2 to 9; return the filtered result or raise a journaled :class:`Refusal`."""
        request: ActionRequest | None = None
        intent: int | None = None
        try:
            served = self._rung_identity_and_callers(peer)
            resolved = self._rung_action(proposal, served)
            request = resolved.request
            vault_epoch = self._rung_vault()
            grant = self._rung_approval(peer, request, served, vault_epoch)
            self._rung_still_the_requester(peer)
            if cancel is not None and cancel.is_set():
                # The agent withdrew the request; nothing runs after a cancel.
                raise Refusal("denied", 6, "approval_cancelled", "the request was cancelled")
            intent = self._rung_intent(peer, request, grant.id)
            return self._rung_execute_and_record(peer, resolved, grant, intent)
        except Refusal as refusal:
            self._journal_refusal(peer, proposal, request, refusal, intent)
            raise

    # -- rungs --------------------------------------------------------------------------------

    def _rung_identity_and_callers(self, peer: PeerIdentity) -> ServedPolicy:
        try:
            self._probe.verify(peer)
        except Denied as exc:
            raise Refusal("denied", 2, "identity", exc.message) from exc
        served = self._policies.served
        if served is None:
            # Nothing was ever accepted in this run; the accepted policy lives in the vault.
            if not self._vault.unlocked:
                raise Refusal("locked", 5, "locked", "the vault is locked")
            raise Refusal("denied", 3, "no_policy", "no accepted policy; run `sp policy accept`")
        try:
            check_caller(served.policy.callers, peer, self._admitted)
        except CallerRefused as exc:
            raise Refusal("denied", 3, "caller", exc.message) from exc
        return served

    def _rung_action(self, proposal: Proposal, served: ServedPolicy) -> Resolved:
        policy = served.policy
        try:
            resolved = _resolve(proposal, served)
        except Refusal as refusal:
            if refusal.category != "unknown_action" or not self._policies.pending_declares(
                *_proposal_target(proposal)
            ):
                raise
            # The human's edit is there but not accepted: say so, or the agent (and the person
            # reading its answer) would think the policy lacks the action.
            raise Refusal(
                refusal.code,
                refusal.rung,
                refusal.category,
                f"{refusal.message}; gateway.toml declares it, but that policy change waits "
                "for a human to run `sp policy accept`",
            ) from None
        credential = policy.credentials[resolved.request.credential]
        try:
            self._rates.take(resolved.request.credential, credential.rate_per_minute)
        except Denied as exc:
            raise Refusal("denied", 4, "rate", exc.message) from exc
        return resolved

    def _rung_vault(self) -> int:
        try:
            _, epoch = self._vault.current()
        except VaultLocked as exc:
            raise Refusal("locked", 5, "locked", "the vault is locked") from exc
        return epoch

    def _rung_approval(
        self, peer: PeerIdentity, request: ActionRequest, served: ServedPolicy, epoch: int
    ) -> Grant:
        settings = served.policy.gateway
        try:
            return self._approvals.obtain(
                peer,
                request,
                vault_epoch=epoch,
                timeout_s=settings.approval_timeout_s,
                session_max_s=settings.session_max_minutes * 60.0,
            )
        except ApprovalTimedOut as exc:
            raise Refusal("timeout", 6, "approval_timeout", exc.message) from exc
        except ApprovalRefused as exc:
            code: ErrorCode = (
                "locked" if exc.outcome == "voided" and not self._vault.unlocked else "denied"
            )
            raise Refusal(code, 6, f"approval_{exc.outcome}", exc.message) from exc
        except Error as exc:
            raise Refusal("unavailable", 6, "journal", "the session could not be recorded") from exc

    def _rung_still_the_requester(self, peer: PeerIdentity) -> None:
        """An approval can take minutes: the process must still be the one the card showed
        (not exited, its pid not reused, no exec of another program since it asked)."""
        try:
            self._probe.verify(peer)
        except Denied as exc:
            raise Refusal(
                "denied", 6, "identity_after_approval", "the requester changed while it waited"
            ) from exc

    def _rung_intent(self, peer: PeerIdentity, request: ActionRequest, grant_id: str) -> int:
        """Journal the intent; its sequence is what the record closing it names (in the clear,
        so a restart finds an intent the gateway died before closing, vault locked or not)."""
        try:
            head = self._journal.record(
                "action.intent",
                {"request": request.shape(), "grant": grant_id, "requester": peer.as_record()},
            )
            return head.seq
        except Error as exc:
            raise Refusal("unavailable", 7, "journal", "the intent could not be recorded") from exc

    def _rung_execute_and_record(
        self, peer: PeerIdentity, resolved: Resolved, grant: Grant, intent: int
    ) -> dict[str, object]:
        request = resolved.request
        try:
            vault, now_epoch = self._vault.current()
            self._approvals.consume(grant, peer, request, now_epoch)
        except VaultLocked as exc:
            raise Refusal("locked", 8, "locked", "the vault was locked before execution") from exc
        except ApprovalRefused as exc:
            raise Refusal("denied", 8, f"approval_{exc.outcome}", exc.message) from exc
        started = self._clock()
        status = "ok"
        result: dict[str, object] = {}
        refusal: Refusal | None = None
        try:
            result = self._execute(vault.secret(request.credential), resolved)
        except ActionError as exc:
            status = exc.failure
            refusal = Refusal(exc.code, 8, f"upstream_{exc.failure}", exc.message)
        except VaultLocked:  # locked after the approval was consumed: before secret() returned
            status = "locked"
            refusal = Refusal("locked", 8, "locked", "the vault was locked before execution")
        except Error as exc:
            status = "error"
            refusal = Refusal("internal", 8, "internal", f"the action could not run: {exc.message}")
        except Exception as exc:  # an executor bug must not kill the gateway or leak a trace
            status = "error"
            refusal = Refusal(
                "internal", 8, "internal", f"the action failed ({type(exc).__name__})"
            )
        duration_ms = int((self._clock() - started) * 1000)
        try:
            self._journal.record(
                "action.outcome",
                {
                    "request_id": request.request_id,
                    "status": status,
                    "duration_ms": duration_ms,
                    **_result_summary(result),
                },
                ref={"intent": intent},
            )
        except Error as exc:
            raise Refusal(
                "unavailable",
                9,
                "journal",
                "the action ran but its outcome could not be recorded; do not retry automatically",
            ) from exc
        if refusal is not None:
            raise refusal
        return result

    def _execute(self, secret: object, resolved: Resolved) -> dict[str, object]:
        action = resolved.action
        if isinstance(action, SshAction):
            if not isinstance(secret, SshKeySecret):
                raise Error("the credential is not an ssh key")
            ssh = self._executor.ssh_exec(action, secret)
            return _filter_ssh(ssh, resolved.max_output_bytes)
        if not isinstance(secret, TokenSecret | BasicSecret):
            raise Error("the credential is not a token or basic secret")
        http = self._executor.http_request(action, secret)
        return _filter_http(http, action.operation.response_fields)

    # -- journal ------------------------------------------------------------------------------

    def _journal_refusal(
        self,
        peer: PeerIdentity,
        proposal: Proposal,
        request: ActionRequest | None,
        refusal: Refusal,
        intent: int | None,
    ) -> None:
        if refusal.rung >= 7 and refusal.category == "journal":
            return  # the journal is what failed; the reply says so
        body: dict[str, object] = {
            "request_id": proposal.id,
            "rung": refusal.rung,
            "code": refusal.code,
            "category": refusal.category,
            "reason": refusal.message,
            "requester": peer.as_record(),
        }
        body["request"] = request.shape() if request is not None else _proposal_names(proposal)
        served = self._policies.served
        body["policy"] = served.digest if served is not None else None
        try:
            ref = None if intent is None else {"intent": intent}
            self._journal.record("action.denied", body, ref=ref)
        except Error:
            # The refusal stands either way; a reply that nothing ran is still true.
            refusal.code = "unavailable" if refusal.rung < 7 else refusal.code


def _proposal_target(proposal: Proposal) -> tuple[str, str, str]:
    if isinstance(proposal, ProposeSsh):
        return "ssh", proposal.host_id, proposal.command_id
    return "http", proposal.service_id, proposal.operation_id


def _resolve(proposal: Proposal, served: ServedPolicy) -> Resolved:
    policy = served.policy
    if isinstance(proposal, ProposeSsh):
        host = policy.ssh.hosts.get(proposal.host_id)
        if host is None:
            raise Refusal("denied", 4, "unknown_action", "no such ssh host in the accepted policy")
        command = host.commands.get(proposal.command_id)
        if command is None:
            raise Refusal("denied", 4, "unknown_action", "no such command for this host")
        args = _validate(command.params, proposal.args, command.allow_leading_dash)
        with _unpreparable():
            prepared: SshAction | HttpAction = prepare_ssh(
                proposal.host_id, host, proposal.command_id, command, args
            )
        credential_id, read_only, cap = host.credential, command.read_only, command.max_output_bytes
    else:
        service = policy.http.services.get(proposal.service_id)
        if service is None:
            raise Refusal(
                "denied", 4, "unknown_action", "no such http service in the accepted policy"
            )
        operation = service.operations.get(proposal.operation_id)
        if operation is None:
            raise Refusal("denied", 4, "unknown_action", "no such operation for this service")
        args = _validate(operation.params, proposal.args, ())
        with _unpreparable():
            prepared = prepare_http(
                proposal.service_id, service, proposal.operation_id, operation, args
            )
        credential_id, read_only = service.credential, operation.read_only
        cap = service.max_response_bytes
    request = ActionRequest(
        request_id=proposal.id,
        kind=proposal.action,
        target_id=prepared.host_id if isinstance(prepared, SshAction) else prepared.service_id,
        operation_id=(
            prepared.command_id if isinstance(prepared, SshAction) else prepared.operation_id
        ),
        credential=credential_id,
        scope=policy.credentials[credential_id].approval,
        args=args,
        policy_digest=served.digest,
        read_only=read_only,
        prepared=prepared,
    )
    return Resolved(request, cap)


@contextlib.contextmanager
def _unpreparable() -> Iterator[None]:
    """An action that cannot be built safely is refused here, before any card or connection."""
    try:
        yield
    except ActionError as exc:
        raise Refusal("denied", 4, f"prepare_{exc.failure}", exc.message) from exc


def _validate(
    params: Mapping[str, ParamSpec], args: dict[str, str | int], allow_leading_dash: Collection[str]
) -> dict[str, str | int]:
    try:
        return validate_args(params, args, allow_leading_dash=allow_leading_dash)
    except ArgumentRejected as exc:
        raise Refusal("denied", 4, "argument", exc.message) from exc


def _filter_ssh(result: SshExecResult, cap: int) -> dict[str, object]:
    data = result.model_dump()
    for stream in ("stdout", "stderr"):
        text = data[stream]
        assert isinstance(text, str)
        if len(text.encode("utf-8")) > cap:
            data[stream] = text.encode("utf-8")[:cap].decode("utf-8", "ignore")
            data[f"{stream}_truncated"] = True
    return data


def _filter_http(result: HttpResult, response_fields: list[str]) -> dict[str, object]:
    allowed = set(response_fields)
    return {
        "status": result.status,
        "fields": {name: value for name, value in result.fields.items() if name in allowed},
    }


def _result_summary(result: dict[str, object]) -> dict[str, object]:
    """Sizes and statuses only: served content never goes into a journal."""
    if "exit_status" in result:
        return {
            "exit_status": result["exit_status"],
            "stdout_chars": len(str(result.get("stdout", ""))),
            "stderr_chars": len(str(result.get("stderr", ""))),
        }
    if "status" in result:
        fields = result.get("fields")
        return {
            "http_status": result["status"],
            "fields": sorted(fields) if isinstance(fields, dict) else [],
        }
    return {}


def _proposal_names(proposal: Proposal) -> dict[str, object]:
    """Names only (schema-valid identifiers); argument values are never journaled."""
    if isinstance(proposal, ProposeSsh):
        target, operation = proposal.host_id, proposal.command_id
    else:
        target, operation = proposal.service_id, proposal.operation_id
    return {
        "action": proposal.action,
        "target": target,
        "operation": operation,
        "arg_names": sorted(proposal.args)[:32],
    }
