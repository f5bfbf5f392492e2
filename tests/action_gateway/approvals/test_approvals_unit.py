"""Approval rules with a manual clock and fake liveness: grants, expiry, voiding, approvers."""

from __future__ import annotations

import threading
import time

import pytest

from safeport.action_gateway.approvals.approver_rules import ApproverRefused, check_approver
from safeport.action_gateway.approvals.broker import (
    PER_CALL_GRANT_S,
    ApprovalRefused,
    Approvals,
    ApprovalTimedOut,
)
from safeport.action_gateway.approvals.cards import MAX_FIELD_CHARS, ActionRequest, ApprovalScope
from safeport.action_gateway.executors.interface import SshAction
from safeport.action_gateway.identity.model import PeerIdentity, ProcessInfo
from safeport.shared.schemas.config import SshCommand, SshHost

HOST = SshHost(
    address="203.0.113.7", user="deploy", credential="key", host_keys=["ssh-ed25519 AAAA"]
)


def proc(pid: int, name: str, *, interpreter: bool = False, launcher: bool = False) -> ProcessInfo:
    return ProcessInfo(
        pid=pid,
        start_time=pid * 7,
        uid=1000,
        name=name,
        exe=f"/usr/bin/{name}",
        exe_sha256="0" * 64,
        interpreter=interpreter,
        launcher=launcher,
    )


INIT = proc(1, "systemd")
TERMINAL = proc(100, "gnome-terminal")
SHELL = proc(110, "bash", interpreter=True)
CLIENT = proc(120, "claude")
NPX = proc(130, "npx", launcher=True)
SERVER = proc(140, "python3", interpreter=True)
REQUESTER = PeerIdentity(uid=1000, gid=1000, chain=(SERVER, NPX, CLIENT, SHELL, TERMINAL, INIT))


def peer(*chain: ProcessInfo) -> PeerIdentity:
    return PeerIdentity(uid=1000, gid=1000, chain=chain)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Journal:
    def __init__(self) -> None:
        self.records: list[tuple[str, dict[str, object]]] = []

    def record(self, kind: str, body: dict[str, object]) -> None:
        self.records.append((kind, body))


class Liveness:
    def __init__(self) -> None:
        self.dead: set[int] = set()

    def alive(self, identity: PeerIdentity) -> bool:
        return identity.pid not in self.dead


def request(
    scope: ApprovalScope = "session", args: dict[str, str | int] | None = None
) -> ActionRequest:
    return ActionRequest(
        request_id="r1",
        kind="ssh_exec",
        target_id="h",
        operation_id="c",
        credential="key",
        scope=scope,
        args=args or {"s": "x"},
        policy_digest="p1",
        read_only=True,
        prepared=SshAction("h", HOST, "c", SshCommand(argv=["uptime"]), "uptime"),
    )


World = tuple[Approvals, Clock, Journal, Liveness]


@pytest.fixture
def world() -> World:
    clock, journal, live = Clock(), Journal(), Liveness()
    return Approvals(journal, live, clock=clock), clock, journal, live


def _answer(
    approvals: Approvals, approve: bool = True, approver: PeerIdentity | None = None
) -> None:
    """Decide the next card from another thread, as the control server would. The waits on
    both sides are long (60 s) so that a loaded machine cannot expire a card before this
    thread gets to it; they end as soon as the card is there or decided."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            cards = approvals.cards()
            if cards:
                approvals.decide(
                    cards[0].id,
                    approve,
                    approver or peer(proc(900, "sp"), INIT),
                    allow_in_client=False,
                )
                return
            time.sleep(0.002)

    threading.Thread(target=run, daemon=True).start()


def test_a_session_grant_is_reused_then_ends_at_session_max(world: World) -> None:
    approvals, clock, journal, _ = world
    _answer(approvals)
    first = approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=60, session_max_s=60)
    again = approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=0.05, session_max_s=60)
    assert again.id == first.id
    clock.now += 61
    with pytest.raises(ApprovalTimedOut):
        approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=0.05, session_max_s=60)
    assert ("session.ended", {"session": first.id, "reason": "expired"}) in journal.records


def test_a_session_grant_is_bound_to_the_credential_and_policy(world: World) -> None:
    approvals, _, _, _ = world
    _answer(approvals)
    approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=60, session_max_s=60)
    other_policy = ActionRequest(**{**request().__dict__, "policy_digest": "p2"})
    with pytest.raises(ApprovalTimedOut):
        approvals.obtain(REQUESTER, other_policy, vault_epoch=1, timeout_s=0.05, session_max_s=60)
    other_cred = ActionRequest(**{**request().__dict__, "credential": "other"})
    with pytest.raises(ApprovalTimedOut):
        approvals.obtain(REQUESTER, other_cred, vault_epoch=1, timeout_s=0.05, session_max_s=60)


def test_the_reaper_ends_a_session_whose_process_exited(world: World) -> None:
    approvals, _, journal, live = world
    _answer(approvals)
    grant = approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=60, session_max_s=60)
    live.dead.add(REQUESTER.pid)
    assert [g.id for g in approvals.reap()] == [grant.id]
    assert ("session.ended", {"session": grant.id, "reason": "process exited"}) in journal.records
    assert approvals.sessions() == []


def test_a_per_call_grant_is_spent_by_its_first_use(world: World) -> None:
    approvals, _, _, _ = world
    _answer(approvals)
    req = request("per-call")
    grant = approvals.obtain(REQUESTER, req, vault_epoch=1, timeout_s=60, session_max_s=60)
    approvals.consume(grant, REQUESTER, req, 1)
    with pytest.raises(ApprovalRefused, match="already used"):
        approvals.consume(grant, REQUESTER, req, 1)


def test_a_per_call_grant_covers_only_its_exact_arguments(world: World) -> None:
    approvals, _, _, _ = world
    _answer(approvals)
    grant = approvals.obtain(
        REQUESTER, request("per-call"), vault_epoch=1, timeout_s=60, session_max_s=60
    )
    with pytest.raises(ApprovalRefused, match="does not cover"):
        approvals.consume(grant, REQUESTER, request("per-call", {"s": "other"}), 1)


def test_a_per_call_grant_expires_after_a_minute(world: World) -> None:
    approvals, clock, _, _ = world
    _answer(approvals)
    req = request("per-call")
    grant = approvals.obtain(REQUESTER, req, vault_epoch=1, timeout_s=60, session_max_s=60)
    clock.now += PER_CALL_GRANT_S + 1
    with pytest.raises(ApprovalRefused, match="expired"):
        approvals.consume(grant, REQUESTER, req, 1)


def test_a_lock_between_approval_and_use_voids_the_grant(world: World) -> None:
    approvals, _, _, _ = world
    _answer(approvals)
    req = request("per-call")
    grant = approvals.obtain(REQUESTER, req, vault_epoch=1, timeout_s=60, session_max_s=60)
    with pytest.raises(ApprovalRefused, match="locked since the approval"):
        approvals.consume(grant, REQUESTER, req, 3)


def test_void_all_withdraws_a_waiting_card(world: World) -> None:
    approvals, _, _, _ = world

    def lock_soon() -> None:
        while not approvals.cards():
            time.sleep(0.002)
        approvals.void_all("vault locked")

    threading.Thread(target=lock_soon, daemon=True).start()
    with pytest.raises(ApprovalRefused) as refused:
        approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=60, session_max_s=60)
    assert refused.value.outcome == "voided"


def test_an_unshowable_request_is_refused_without_a_card(world: World) -> None:
    approvals, _, _, _ = world
    long = SshAction("h", HOST, "c", SshCommand(argv=["echo"]), "x" * (MAX_FIELD_CHARS + 1))
    huge = ActionRequest(**{**request().__dict__, "prepared": long})
    with pytest.raises(ApprovalRefused) as refused:
        approvals.obtain(REQUESTER, huge, vault_epoch=1, timeout_s=60, session_max_s=60)
    assert refused.value.outcome == "unshowable" and approvals.cards() == []


def test_approvers_inside_the_requester_or_its_launchers_are_refused() -> None:
    with pytest.raises(ApproverRefused, match="inside the requesting process"):
        check_approver(peer(proc(900, "sp"), SERVER, NPX, CLIENT), REQUESTER, allow_in_client=True)
    with pytest.raises(ApproverRefused, match="launcher"):
        check_approver(peer(proc(900, "sp"), NPX, CLIENT), REQUESTER, allow_in_client=True)


def test_an_approver_inside_the_client_is_refused_unless_allowed() -> None:
    in_client = peer(proc(900, "sp"), proc(901, "bash", interpreter=True), CLIENT, SHELL)
    with pytest.raises(ApproverRefused, match="client"):
        check_approver(in_client, REQUESTER, allow_in_client=False)
    check_approver(in_client, REQUESTER, allow_in_client=True)


def test_an_approver_in_another_terminal_tab_is_admitted() -> None:
    # Same terminal emulator, but a sibling shell: not below the client.
    other_tab = peer(proc(900, "sp"), proc(111, "bash", interpreter=True), TERMINAL, INIT)
    check_approver(other_tab, REQUESTER, allow_in_client=False)


def test_a_reused_pid_is_not_the_same_process() -> None:
    # pid 140 again, but a different start time: a different process, not the requester.
    reborn = ProcessInfo(
        pid=140, start_time=999_999, uid=1000, name="sp", exe="/usr/bin/sp", exe_sha256=None
    )
    check_approver(peer(reborn, INIT), REQUESTER, allow_in_client=False)


def test_init_is_nobodys_client() -> None:
    orphan = PeerIdentity(uid=1000, gid=1000, chain=(SERVER, INIT))
    check_approver(peer(proc(900, "sp"), INIT), orphan, allow_in_client=False)


def test_a_card_answered_but_not_yet_taken_by_its_waiter_is_no_longer_listed(
    world: World,
) -> None:
    """Between a yes and the moment the waiting proposal wakes, the card is no longer waiting:
    a second approver listing then (or a script answering the first card it lists) must not be
    shown it, for an answer to it is refused as already decided."""
    approvals = world[0]
    granted: list[object] = []
    waiter = threading.Thread(
        target=lambda: granted.append(
            approvals.obtain(REQUESTER, request(), vault_epoch=1, timeout_s=60, session_max_s=60)
        ),
        daemon=True,
    )
    waiter.start()
    deadline = time.monotonic() + 60
    while not approvals.cards() and time.monotonic() < deadline:
        time.sleep(0.002)
    (card,) = approvals.cards()
    pending = approvals._pending[card.id]
    # The waiter keeps waiting on the event it holds: the answer below sets another one.
    wakes_the_waiter, pending.done = pending.done, threading.Event()
    approvals.decide(card.id, True, peer(proc(900, "sp"), INIT), allow_in_client=False)
    assert approvals.cards() == []
    wakes_the_waiter.set()
    waiter.join(60)
    assert len(granted) == 1
