"""The decision ladder for one proposal, with every collaborator injected.

Rungs, in order; the first that refuses ends the proposal and nothing past it is touched:

1. frame, JSON and schema (the server, before this module) → ``invalid``; room on the
   journals' disk (:mod:`journal_space`) → ``unavailable``
2. peer identity unchanged since connect → ``denied``
3. caller rules → ``denied``
4. action named in the accepted policy, arguments valid, checked as the executor would check
   it now (the addresses a service resolves to, its CA), rate cap → ``denied``
5. vault unlocked → ``locked``; a credential from an OpenBao/Vault server can be served now
   (:mod:`credentials`: not sealed, reachable, in time, login accepted) → ``upstream``
6. approval (session grant or a card) → ``denied`` / ``timeout``
7. durable intent record → ``unavailable``
8. execute with the credential injected here (:mod:`attempt`) → ``upstream`` / ``denied``
9. filter the result; durable outcome record → ``unavailable`` ("do not retry automatically")

A rung refuses by raising a :class:`Refusal` carrying its wire code, rung and category; it is
journaled before the proposal is answered: whole while the requester's uid has budget left,
past that counted into one record per category and window (:mod:`refusal_budget`). Reasons
are fixed sentences with names from the policy, never the agent's raw values. The answer is
one :data:`~.outcome.ProposalOutcome`: ``Executed`` with the filtered result, or ``Refused``;
the agent socket renders it into the wire reply.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from safeport.action_gateway.approvals.broker import ApprovalRefused, Approvals, ApprovalTimedOut
from safeport.action_gateway.approvals.cards import ActionRequest
from safeport.action_gateway.approvals.grants import Grant
from safeport.action_gateway.evidence.refusal_budget import RefusalBudget, record_size
from safeport.action_gateway.executors.interface import ActionError, Executor
from safeport.action_gateway.identity.model import IdentityProbe, PeerIdentity
from safeport.action_gateway.ladder.attempt import Attempt, attempt_action
from safeport.action_gateway.ladder.collaborators import ActionJournal, PolicySource, VaultView
from safeport.action_gateway.ladder.credentials import CredentialSupply, local_only
from safeport.action_gateway.ladder.outcome import ActionResult, Executed, ProposalOutcome, Refused
from safeport.action_gateway.ladder.refusal import Refusal, Rung, refusal_record
from safeport.action_gateway.ladder.remote_proposal import no_remote_clients, remote_request
from safeport.action_gateway.ladder.resolve import (
    Proposal,
    Resolved,
    proposal_names,
    proposal_target,
    resolve,
)
from safeport.action_gateway.ladder.result_filters import result_summary
from safeport.action_gateway.policy.caller_rules import CallerRefused, check_caller
from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.action_gateway.policy.store import ServedPolicy
from safeport.errors import Denied, Error, ErrorCode
from safeport.shared.schemas.results import CardOutcome
from safeport.shared.schemas.wire import SqlResult, SshExecResult
from safeport.vault import VaultLocked
from safeport.vault.interface import UnlockedVault


@dataclass(frozen=True, kw_only=True)
class Ladder:
    """The rungs over injected collaborators. The ladder keeps no state of its own between
    proposals (grants live in ``approvals``, caps in ``rates``), so one instance serves every
    worker thread."""

    probe: IdentityProbe
    policies: PolicySource
    vault: VaultView
    approvals: Approvals
    journal: ActionJournal
    executor: Executor
    rates: RateLimiter
    admitted_uids: frozenset[int]
    clock: Callable[[], float] = field(default=time.monotonic)
    budget: RefusalBudget = field(default_factory=RefusalBudget)
    # Why the journals' disk has no room for a proposal now, or None (:mod:`journal_space`).
    space: Callable[[], str | None] = field(default=lambda: None)
    # A proposal's ``remote_token`` -> the remote client it proves (named on the card), or Denied.
    remote_caller: Callable[[str], str] = field(default=no_remote_clients)
    credentials: CredentialSupply = field(default_factory=local_only)

    def propose(
        self, peer: PeerIdentity, proposal: Proposal, cancel: threading.Event | None = None
    ) -> ProposalOutcome:
        """Run rungs 2 to 9: the filtered result, or the refusal that stopped it (journaled or
        counted before this returns)."""
        request: ActionRequest | None = None
        intent: int | None = None
        low = self.space()
        if low is not None:
            # Nothing is written for it: the disk is what is short. Counted, journaled as one
            # record when there is room again.
            self.budget.count(peer.uid, "disk_space")
            return Refused("unavailable", Rung.INTAKE, "disk_space", low)
        try:
            served = self._rung_identity_and_callers(peer)
            resolved = self._rung_action(peer, proposal, served)
            request = resolved.request
            vault, vault_epoch = self._rung_vault()
            # A credential from a server: sealed, unreachable, slow or refusing the login
            # means no card (and nothing falls back to the local vault); nor a dead OAuth grant.
            resolved = self.credentials.check_before_card(resolved, vault)
            request = resolved.request
            grant = self._rung_approval(peer, request, served, vault_epoch, proposal.wait_s)
            self._rung_still_the_requester(peer)
            if cancel is not None and cancel.is_set():
                # The agent withdrew the request; nothing runs after a cancel.
                raise Refusal(
                    "denied", Rung.APPROVAL, "approval_cancelled", "the request was cancelled"
                )
            intent = self._rung_intent(peer, request, grant.id)
            return Executed(self._rung_execute_and_record(peer, resolved, grant, intent))
        except Refusal as refusal:
            return Refused.of(self._journal_refusal(peer, proposal, request, refusal, intent))

    # -- rungs --------------------------------------------------------------------------------

    def _rung_identity_and_callers(self, peer: PeerIdentity) -> ServedPolicy:
        try:
            self.probe.verify(peer)
        except Denied as exc:
            raise Refusal("denied", Rung.IDENTITY, "identity", exc.message) from exc
        served = self.policies.served
        if served is None:
            # Nothing was ever accepted in this run; the accepted policy lives in the vault.
            if not self.vault.unlocked:
                raise Refusal("locked", Rung.VAULT, "locked", "the vault is locked")
            raise Refusal(
                "denied", Rung.CALLER, "no_policy", "no accepted policy; run `sp policy accept`"
            )
        try:
            check_caller(served.policy.callers, peer, self.admitted_uids)
        except CallerRefused as exc:
            raise Refusal("denied", Rung.CALLER, "caller", exc.message) from exc
        return served

    def _rung_action(
        self, peer: PeerIdentity, proposal: Proposal, served: ServedPolicy
    ) -> Resolved:
        policy = served.policy
        try:
            resolved = resolve(proposal, served)
        except Refusal as refusal:
            if refusal.category != "unknown_action" or not self.policies.pending_declares(
                *proposal_target(proposal)
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
        if proposal.remote_token is not None:
            resolved = remote_request(resolved, proposal.remote_token, self.remote_caller)
        try:
            # What the executor would refuse after approval (a name resolving to an address
            # the service may not reach, an unusable CA), refused before any card is shown.
            self.executor.check_before_card(resolved.action)
        except ActionError as exc:
            raise Refusal(exc.code, Rung.ACTION, f"preflight_{exc.failure}", exc.message) from exc
        credential = policy.credentials[resolved.request.credential]
        try:
            self.rates.take(resolved.request.credential, credential.rate_per_minute, peer.uid)
        except Denied as exc:
            raise Refusal("denied", Rung.ACTION, "rate", exc.message) from exc
        return resolved

    def _rung_vault(self) -> tuple[UnlockedVault, int]:
        try:
            return self.vault.current()
        except VaultLocked as exc:
            raise Refusal("locked", Rung.VAULT, "locked", "the vault is locked") from exc

    def _rung_approval(
        self,
        peer: PeerIdentity,
        request: ActionRequest,
        served: ServedPolicy,
        epoch: int,
        wait_s: int | None,
    ) -> Grant:
        settings = served.policy.gateway
        # A requester whose client gives up sooner shortens its own card, never lengthens it.
        timeout_s = min(settings.approval_timeout_s, wait_s or settings.approval_timeout_s)
        try:
            return self.approvals.obtain(
                peer,
                request,
                vault_epoch=epoch,
                timeout_s=timeout_s,
                session_max_s=settings.session_max_minutes * 60.0,
            )
        except ApprovalTimedOut as exc:
            raise Refusal("timeout", Rung.APPROVAL, "approval_timeout", exc.message) from exc
        except ApprovalRefused as exc:
            code: ErrorCode = (
                "locked" if exc.outcome == "voided" and not self.vault.unlocked else "denied"
            )
            raise Refusal(code, Rung.APPROVAL, f"approval_{exc.outcome}", exc.message) from exc
        except Error as exc:
            raise Refusal(
                "unavailable", Rung.APPROVAL, "journal", "the session could not be recorded"
            ) from exc

    def _rung_still_the_requester(self, peer: PeerIdentity) -> None:
        """An approval can take minutes: the process must still be the one the card showed
        (not exited, its pid not reused, no exec of another program since it asked)."""
        try:
            self.probe.verify(peer)
        except Denied as exc:
            raise Refusal(
                "denied",
                Rung.APPROVAL,
                "identity_after_approval",
                "the requester changed while it waited",
            ) from exc

    def _rung_intent(self, peer: PeerIdentity, request: ActionRequest, grant_id: str) -> int:
        """Journal the intent; its sequence is what the record closing it names (in the clear,
        so a restart finds an intent the gateway died before closing, vault locked or not)."""
        try:
            head = self.journal.record(
                "action.intent",
                {"request": request.shape(), "grant": grant_id, "requester": peer.as_record()},
            )
            return head.seq
        except Error as exc:
            raise Refusal(
                "unavailable", Rung.INTENT, "journal", "the intent could not be recorded"
            ) from exc

    def _rung_execute_and_record(
        self, peer: PeerIdentity, resolved: Resolved, grant: Grant, intent: int
    ) -> ActionResult:
        """Spend the grant, run the action once, journal its outcome (ran or not), tell the
        human who approved it; return the filtered result or raise the attempt's refusal."""
        vault = self._spend_grant(peer, resolved.request, grant)
        attempt = attempt_action(
            executor=self.executor,
            credentials=self.credentials,
            resolved=resolved,
            vault=vault,
            intent=intent,
            clock=self.clock,
        )
        self._record_outcome(resolved.request, attempt, intent)
        self._tell_approvers(grant, attempt.ended)
        if isinstance(attempt.ended, Refusal):
            raise attempt.ended
        return attempt.ended

    def _spend_grant(
        self, peer: PeerIdentity, request: ActionRequest, grant: Grant
    ) -> UnlockedVault:
        """The grant is consumed against the vault's epoch now: a lock since the approval (or a
        revoked session) stops the action before its credential is read."""
        try:
            vault, now_epoch = self.vault.current()
            self.approvals.consume(grant, peer, request, now_epoch)
        except VaultLocked as exc:
            raise Refusal(
                "locked", Rung.EXECUTE, "locked", "the vault was locked before execution"
            ) from exc
        except ApprovalRefused as exc:
            raise Refusal("denied", Rung.EXECUTE, f"approval_{exc.outcome}", exc.message) from exc
        return vault

    def _record_outcome(self, request: ActionRequest, attempt: Attempt, intent: int) -> None:
        """The record closing the intent: sizes and statuses only, never served content."""
        ended = attempt.ended
        summary = {} if isinstance(ended, Refusal) else result_summary(ended)
        try:
            self.journal.record(
                "action.outcome",
                {
                    "request_id": request.request_id,
                    "status": attempt.status,
                    "duration_ms": attempt.duration_ms,
                    **attempt.stopped,
                    **summary,
                    **({"credential": attempt.origin} if attempt.origin else {}),
                },
                ref={"intent": intent},
            )
        except Error as exc:
            raise Refusal(
                "unavailable",
                Rung.OUTCOME,
                "journal",
                "the action ran but its outcome could not be recorded; do not retry automatically",
            ) from exc

    def _tell_approvers(self, grant: Grant, ended: ActionResult | Refusal) -> None:
        """The human who answered the card sees what the yes led to: done (the status or exit
        code), refused by a check made at execution, or failed upstream."""
        if grant.card is None:
            return  # a call an open session covered: no card was answered for it
        verdict: Literal["done", "refused", "failed"]
        if isinstance(ended, Refusal):
            verdict = "refused" if ended.code == "denied" else "failed"
            detail = ended.message
        else:
            verdict, detail = "done", _done_detail(ended)
        self.approvals.notify(
            CardOutcome(event="card.outcome", id=grant.card, outcome=verdict, detail=detail)
        )

    # -- journal ------------------------------------------------------------------------------

    def _journal_refusal(
        self,
        peer: PeerIdentity,
        proposal: Proposal,
        request: ActionRequest | None,
        refusal: Refusal,
        intent: int | None,
    ) -> Refusal:
        """Journal ``refusal``; return the refusal to answer with (``unavailable`` before
        rung 7 when its record could not be written)."""
        if refusal.rung >= Rung.INTENT and refusal.category == "journal":
            return refusal  # the journal is what failed; the reply says so
        body = refusal_record(proposal.id, refusal, peer)
        body["request"] = request.shape() if request is not None else proposal_names(proposal)
        served = self.policies.served
        body["policy"] = served.digest if served is not None else None
        if intent is None and not self.budget.admit(peer.uid, refusal.category, record_size(body)):
            return refusal  # counted; journaled with its like in one `action.denied_many` record
        try:
            ref = None if intent is None else {"intent": intent}
            self.journal.record("action.denied", body, ref=ref)
        except Error:
            # The refusal stands either way; a reply that nothing ran is still true.
            if refusal.rung < Rung.INTENT:
                return refusal.answered("unavailable")
        return refusal


def _done_detail(result: ActionResult) -> str:
    """What the approver's card says of an action that ran: its exit code, row count or
    HTTP status."""
    if isinstance(result, SshExecResult):
        return f"exit {result.exit_status}"
    if isinstance(result, SqlResult):
        return f"{result.row_count} row(s)"
    return str(result.status)
