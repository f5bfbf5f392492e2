"""The ladder in process, no sockets: rung order, the journal's failures, cancel, the lock race.

Real approvals, rate limiter, accepted policy and vault state over a real vault file (with a
cheap KDF); the probe, the journal and the executor are small fakes. Every collaborator appends
what the ladder asked of it to one event list, so each test proves which rungs ran and that no
rung past the refusing one did.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.gateway import POLICY
from safeport.action_gateway.approvals.broker import Approvals
from safeport.action_gateway.approvals.cards import ActionRequest, ApprovalCard
from safeport.action_gateway.approvals.grants import Grant
from safeport.action_gateway.core.vault_state import VaultState
from safeport.action_gateway.executors.interface import (
    ActionError,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.action_gateway.identity.model import IdentityChanged, PeerIdentity, ProcessInfo
from safeport.action_gateway.ladder.outcome import ActionResult, Executed, ProposalOutcome, Refused
from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.ladder.rungs import Ladder
from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.action_gateway.policy.store import ServedPolicy
from safeport.errors import Error
from safeport.shared.audit import JournalHead
from safeport.shared.audit.record import canonical_json
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.shared.schemas.results import ApprovalEvent, CardOpened, CardOutcome
from safeport.shared.schemas.wire import HttpResult, ProposeHttp, SqlResult, SshExecResult
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret
from tests.vault.vault_factory import CANARY_TOKEN, make_vault, passphrase

# A cap on the token's credential, so the rate rung can refuse (the shared policy has none).
RATED_POLICY = POLICY.replace(
    '[credentials.deploy-token]\nkind = "token"\napproval = "session"\n',
    '[credentials.deploy-token]\nkind = "token"\napproval = "session"\nrate_per_minute = 1\n',
)
UID = os.geteuid()


def _proc(pid: int, name: str) -> ProcessInfo:
    return ProcessInfo(
        pid=pid, start_time=pid * 7, uid=UID, name=name, exe=f"/usr/bin/{name}", exe_sha256=None
    )


REQUESTER = PeerIdentity(uid=UID, gid=UID, chain=(_proc(40, "server"), _proc(30, "client")))
APPROVER = PeerIdentity(uid=UID, gid=UID, chain=(_proc(90, "sp"), _proc(80, "bash")))


def proposal(environment: str = "staging", operation: str = "deployment_status") -> ProposeHttp:
    return ProposeHttp(
        v=1,
        id="r-1",
        type="propose",
        action="http_request",
        service_id="deploy-api",
        operation_id=operation,
        args={"environment": environment, "service": "web"},
    )


class Probe:
    """Identity checks; ``fail_on`` holds the numbers of the checks that find a changed peer
    (1 is the check on arrival, 2 the one after the approval)."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.fail_on: set[int] = set()
        self.after: dict[int, Callable[[], object]] = {}  # what happens right after a check
        self.checks = 0

    def verify(self, identity: PeerIdentity) -> None:
        self.checks += 1
        self.events.append("identity")
        if self.checks in self.fail_on:
            raise IdentityChanged("the requesting process is not the one that connected")
        if self.checks in self.after:
            self.after[self.checks]()

    def alive(self, identity: PeerIdentity) -> bool:
        return True

    def resolve(self, sock: object) -> PeerIdentity:
        raise AssertionError("the ladder never resolves a socket")

    def release(self, identity: PeerIdentity) -> None:
        return None


class Journal:
    """The actions journal; a kind in ``fail`` cannot be written (a full disk, say)."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.fail: set[str] = set()
        self.records: list[tuple[str, dict[str, object], dict[str, int] | None]] = []

    def record(
        self, kind: str, body: dict[str, object], *, ref: dict[str, int] | None = None
    ) -> JournalHead:
        self.events.append(f"journal.{kind}")
        if kind in self.fail:
            raise Error("the journal could not be written")
        self.records.append((kind, body, ref))
        return JournalHead(seq=len(self.records), hash="0" * 64)


class Executor:
    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.failure: ActionError | None = None
        self.before_card: ActionError | None = None
        self.tokens: list[bytes] = []

    def check_before_card(self, action: SshAction | HttpAction | SqlAction) -> None:
        if self.before_card is not None:
            raise self.before_card  # what the real executor finds on resolving, say

    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult:
        raise AssertionError("no ssh action is proposed here")

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
        self.events.append("executor.http")
        assert isinstance(secret, TokenSecret)
        self.tokens.append(secret.token.reveal())
        if self.failure is not None:
            raise self.failure
        return HttpResult(status=200, fields={"state": "ok", "undeclared": "dropped"})

    def sql_query(
        self, action: SqlAction, secret: TokenSecret | SshKeySecret | BasicSecret
    ) -> SqlResult:
        raise AssertionError("no sql action is proposed here")

    def inspect_roles(
        self, policy: GatewayPolicy, secret_of: Callable[[str], object]
    ) -> tuple[list[str], list[str]]:
        return [], []

    def close_all(self) -> None:
        return None


class Rates(RateLimiter):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def take(self, credential: str, per_minute: int | None, uid: int = -1) -> None:
        self.events.append("rates")
        super().take(credential, per_minute, uid)


class Vault(VaultState):
    events: list[str]

    def current(self) -> tuple[UnlockedVault, int]:
        self.events.append("vault")
        return super().current()


class Spied(Approvals):
    """The real approvals; ``after_consume`` runs once a grant is spent, right before the
    ladder asks the vault for the secret (where a lock from control.sock can land)."""

    events: list[str]
    after_consume: list[Callable[[], object]]

    def consume(
        self, grant: Grant, requester: PeerIdentity, request: ActionRequest, vault_epoch: int
    ) -> None:
        self.events.append("consume")
        super().consume(grant, requester, request, vault_epoch)
        for hook in self.after_consume:
            hook()


class Policies:
    def __init__(self, text: str) -> None:
        policy, digest = parse_gateway_policy(text)
        self.served: ServedPolicy | None = ServedPolicy(policy, digest, text)

    def pending_declares(self, kind: str, target: str, action: str) -> bool:
        return False


class Journaled:
    """The approvals' own journal (session.opened, approval.decided): not a rung."""

    def record(self, kind: str, body: dict[str, object]) -> None:
        return None


@dataclass
class Rig:
    """One ladder and its collaborators; by default every rung passes."""

    folder: Path
    events: list[str] = field(default_factory=list)
    decision: str = "approve"  # approve | deny | cancel
    admitted: frozenset[int] = frozenset({UID})

    def __post_init__(self) -> None:
        store, opened = make_vault(self.folder)
        opened.lock()
        self.probe = Probe(self.events)
        self.journal = Journal(self.events)
        self.executor = Executor(self.events)
        self.rates = Rates(self.events)
        self.vault = Vault(store)
        self.vault.events = self.events
        self.vault.unlock(passphrase())
        self.approvals = Spied(Journaled(), self.probe)
        self.approvals.events = self.events
        self.approvals.after_consume = []
        self.approvals.on_card_opened(self._decide)
        self.cancel = threading.Event()
        self.policies = Policies(RATED_POLICY)

    def ladder(self) -> Ladder:
        return Ladder(
            probe=self.probe,
            policies=self.policies,
            vault=self.vault,
            approvals=self.approvals,
            journal=self.journal,
            executor=self.executor,
            rates=self.rates,
            admitted_uids=self.admitted,
        )

    def outcome(self, request: ProposeHttp | None = None) -> ProposalOutcome:
        return self.ladder().propose(REQUESTER, request or proposal(), self.cancel)

    def propose(self, request: ProposeHttp | None = None) -> ActionResult:
        outcome = self.outcome(request)
        assert isinstance(outcome, Executed), outcome
        return outcome.result

    def refused(self, request: ProposeHttp | None = None) -> Refused:
        outcome = self.outcome(request)
        assert isinstance(outcome, Refused), outcome
        return outcome

    def _decide(self, card: ApprovalCard) -> None:
        self.events.append("card")
        if self.decision == "cancel":
            # The agent's cancel arrives while the card waits: the agent side sets the event
            # and withdraws the card, as agent_protocol does.
            self.cancel.set()
            assert self.approvals.withdraw(REQUESTER, card.request.request_id)
            return
        self.approvals.decide(card.id, self.decision == "approve", APPROVER, allow_in_client=False)

    def denials(self) -> list[dict[str, object]]:
        return [body for kind, body, _ in self.journal.records if kind == "action.denied"]


# What each rung asks of its collaborator, in the order a proposal that passes them all asks.
PASSING = [
    "identity",  # 2: the peer is the process that connected
    "rates",  # 4: after resolution (names, arguments) against the accepted policy
    "vault",  # 5: unlocked
    "card",  # 6: a card for this request (the rig's approver answers it at once)
    "identity",  # 6: still the requester after the wait
    "journal.action.intent",  # 7
    "vault",  # 8: the vault and its epoch at execution
    "consume",
    "executor.http",
    "journal.action.outcome",  # 9
]


@dataclass(frozen=True)
class Break:
    """One rung made to fail, with the refusal it must give and how far the ladder got."""

    name: str
    code: str
    rung: int
    category: str
    reached: int  # how many PASSING events happen before (and including) the refusing one
    journaled: bool = True  # the refusal is journaled as action.denied

    def apply(self, rig: Rig) -> None:
        if self.name == "identity":
            rig.probe.fail_on.add(1)
        elif self.name == "caller":
            rig.admitted = frozenset({UID + 1})
        elif self.name == "rate":
            rig.rates.take("deploy-token", 1)  # the minute's one call is spent
        elif self.name == "locked":
            rig.vault.lock("test")
        elif self.name == "denied":
            rig.decision = "deny"
        elif self.name == "changed_while_waiting":
            rig.probe.fail_on.add(2)
        elif self.name == "intent":
            rig.journal.fail.add("action.intent")
        elif self.name == "upstream":
            rig.executor.failure = ActionError("unreachable", "the host did not answer")
        elif self.name == "outcome":
            rig.journal.fail.add("action.outcome")


BREAKS = [
    Break("identity", "denied", 2, "identity", reached=1),
    Break("caller", "denied", 3, "caller", reached=1),
    Break("argument", "denied", 4, "argument", reached=1),
    Break("rate", "denied", 4, "rate", reached=2),
    Break("locked", "locked", 5, "locked", reached=3),
    Break("denied", "denied", 6, "approval_denied", reached=4),
    Break("changed_while_waiting", "denied", 6, "identity_after_approval", reached=5),
    Break("intent", "unavailable", 7, "journal", reached=6, journaled=False),
    Break("upstream", "upstream", 8, "upstream_unreachable", reached=10),
    Break("outcome", "unavailable", 9, "journal", reached=10, journaled=False),
]


@pytest.mark.parametrize("first", range(len(BREAKS)), ids=[b.name for b in BREAKS])
def test_the_ladder_refuses_at_the_first_failing_rung_and_runs_nothing_past_it(
    tmp_path: Path, first: int
) -> None:
    # Every rung from `first` on is broken at once: only the first of them may answer, and the
    # record shows the ladder asked nothing of any later rung. (An upstream failure is itself
    # written in the outcome record, so for it rung 9 stays whole: see the test below.)
    rig = Rig(tmp_path)
    expected = BREAKS[first]
    broken = [
        b for b in BREAKS[first:] if not (expected.name == "upstream" and b.name == "outcome")
    ]
    for rung in broken:
        rung.apply(rig)
    bad_args = any(b.name == "argument" for b in broken)
    rig.events.clear()  # spending the rate cap above is set-up, not the proposal
    refusal = rig.refused(proposal(environment="moon" if bad_args else "staging"))
    assert (refusal.code, refusal.rung, refusal.category) == (
        expected.code,
        expected.rung,
        expected.category,
    )
    tail = ["journal.action.denied"] if expected.journaled else []
    assert rig.events == [*PASSING[: expected.reached], *tail]
    ran = expected.name in ("upstream", "outcome")
    assert rig.executor.tokens == ([CANARY_TOKEN] if ran else [])


def test_an_upstream_failure_whose_outcome_cannot_be_written_says_do_not_retry(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.executor.failure = ActionError("unreachable", "the host did not answer")
    rig.journal.fail.add("action.outcome")
    refusal = rig.refused()
    assert (refusal.code, refusal.rung) == ("unavailable", 9)
    assert "do not retry automatically" in refusal.reason
    assert rig.events == PASSING


def test_with_every_rung_passing_the_action_runs_once_and_only_declared_fields_return(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    assert rig.propose().model_dump() == {
        "status": 200,
        "fields": {"state": "ok"},
        "redacted": 0,
        "redactions": [],
    }
    assert rig.events == PASSING
    kinds = [(kind, ref) for kind, _, ref in rig.journal.records]
    assert kinds == [("action.intent", None), ("action.outcome", {"intent": 1})]
    assert rig.executor.tokens == [CANARY_TOKEN]


def test_a_refusal_journal_that_cannot_be_written_answers_unavailable_and_nothing_runs(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.journal.fail.add("action.denied")
    rig.vault.lock("test")
    refusal = rig.refused()
    # Locked would have been the answer; with no record of the refusal the gateway says it is
    # unavailable, which is still true of what happened: nothing ran.
    assert (refusal.code, refusal.rung) == ("unavailable", 5)
    assert rig.events == ["identity", "rates", "vault", "journal.action.denied"]
    assert rig.executor.tokens == [] and rig.journal.records == []


def test_a_refusal_journal_that_works_keeps_the_rungs_own_code(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.vault.lock("test")
    assert rig.refused().code == "locked"
    [denial] = rig.denials()
    assert (denial["rung"], denial["category"], denial["code"]) == (5, "locked", "locked")
    assert rig.policies.served is not None
    assert denial["policy"] == rig.policies.served.digest
    # The rung is a plain number in the journal, as it was before rungs had names.
    assert type(denial["rung"]) is int
    assert b'"rung":5' in canonical_json(denial)


def test_a_refusal_answered_with_another_code_leaves_the_raised_one_as_it_was() -> None:
    raised = Refusal("locked", Rung.VAULT, "locked", "the vault is locked")
    answered = raised.answered("unavailable")
    assert (answered.code, answered.rung, answered.category, answered.message) == (
        "unavailable",
        Rung.VAULT,
        "locked",
        "the vault is locked",
    )
    assert raised.code == "locked"


def test_the_rungs_are_numbered_in_the_order_the_ladder_climbs_them() -> None:
    assert [rung.value for rung in Rung] == list(range(1, 10))


def test_a_cancel_while_the_card_waits_withdraws_it_and_the_action_never_runs(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, decision="cancel")
    refusal = rig.refused()
    assert (refusal.code, refusal.rung, refusal.category) == ("denied", 6, "approval_cancelled")
    assert rig.approvals.cards() == []  # the card is gone from every approver's list
    assert rig.events == [*PASSING[:4], "journal.action.denied"]
    assert rig.executor.tokens == []
    # The grant it would have had does not exist: the next proposal needs a card of its own.
    rig.decision = "approve"
    rig.cancel.clear()
    rig.events.clear()
    rig.rates = Rates(rig.events)  # a fresh minute: the cancelled call spent the cap
    assert rig.propose().model_dump()["status"] == 200
    assert "card" in rig.events


def test_a_cancel_that_arrives_after_the_approval_still_stops_the_action(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.probe.after[2] = rig.cancel.set  # approved, but the agent withdrew before the intent
    refusal = rig.refused()
    assert (refusal.code, refusal.category) == ("denied", "approval_cancelled")
    assert rig.events == [*PASSING[:5], "journal.action.denied"]
    assert rig.executor.tokens == []


def test_a_lock_between_the_approval_and_execution_answers_locked(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.probe.after[2] = lambda: rig.vault.lock("human")  # approved, then `sp vault lock`
    refusal = rig.refused()
    assert (refusal.code, refusal.rung) == ("locked", 8)
    assert rig.executor.tokens == []
    # The intent written before the lock is closed by the refusal's record.
    [denial] = [ref for kind, _, ref in rig.journal.records if kind == "action.denied"]
    assert denial == {"intent": 1}


def test_a_lock_between_the_grant_being_spent_and_the_secret_read_answers_locked_not_internal(
    tmp_path: Path,
) -> None:
    # The narrowest window: the grant is consumed, then `sp vault lock` wipes the vault before
    # the ladder reads the secret from it.
    rig = Rig(tmp_path)
    rig.approvals.after_consume.append(lambda: rig.vault.lock("human"))
    refusal = rig.refused()
    assert refusal.code == "locked"
    assert refusal.rung == 8
    assert rig.executor.tokens == []
    [outcome] = [body for kind, body, _ in rig.journal.records if kind == "action.outcome"]
    assert outcome["status"] == "locked"  # the intent is closed: nothing ran


def test_an_unlocked_vault_with_no_lock_in_between_still_runs(tmp_path: Path) -> None:
    # The guard above must not refuse the ordinary case of a vault that stays unlocked.
    rig = Rig(tmp_path)
    rig.approvals.after_consume.append(lambda: None)
    assert rig.propose().model_dump()["status"] == 200
    assert rig.executor.tokens == [CANARY_TOKEN]


def test_what_the_executor_would_refuse_is_refused_at_rung_4_before_the_vault_or_a_card(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.executor.before_card = ActionError(
        "address_refused", "service 'deploy-api': it resolves now to a loopback address"
    )
    refusal = rig.refused()
    assert (refusal.code, refusal.rung, refusal.category) == (
        "denied", Rung.ACTION, "preflight_address_refused",
    )  # fmt: skip
    assert rig.events == ["identity", "journal.action.denied"]  # no rate, vault or card
    assert rig.denials()[0]["category"] == "preflight_address_refused"


def test_the_approver_hears_what_an_answered_card_led_to_and_nothing_for_a_reused_session(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.policies = Policies(POLICY)  # no rate cap: four calls in a row
    heard: list[ApprovalEvent] = []
    rig.approvals.subscribe(heard.append)
    rig.propose()  # a card, approved: the session opens and the call runs
    rig.propose()  # the same session covers it: no card, so nothing to tell
    rig.executor.failure = ActionError("bad_response", "the service answered 503")
    for grant in rig.approvals.sessions():
        rig.approvals.revoke(grant.id, by="test")
    rig.refused()  # a new card, approved, and the service fails
    rig.executor.failure = ActionError("address_refused", "the host resolves to loopback")
    for grant in rig.approvals.sessions():
        rig.approvals.revoke(grant.id, by="test")
    rig.refused()  # refused by a check made at execution
    cards = [event.id for event in heard if isinstance(event, CardOpened)]
    outcomes = [
        event.model_dump(exclude={"event"}) for event in heard if isinstance(event, CardOutcome)
    ]
    assert outcomes == [
        {"id": cards[0], "outcome": "done", "detail": "200"},
        {"id": cards[1], "outcome": "failed", "detail": "the service answered 503"},
        {"id": cards[2], "outcome": "refused", "detail": "the host resolves to loopback"},
    ]
