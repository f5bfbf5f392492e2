"""Each admitted uid's share of the gateway's shared limits: the pure decisions, the waiting
cards, a credential's rate cap and the refusal budget, with manual clocks."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import cast

import pytest

from safeport.action_gateway.approvals.broker import MAX_PENDING_CARDS, ApprovalRefused, Approvals
from safeport.action_gateway.evidence.journal_space import JournalSpace
from safeport.action_gateway.evidence.journals import DurableJournal, _flush_tallies
from safeport.action_gateway.evidence.refusal_budget import RefusalBudget, record_size
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.action_gateway.policy.shares import at_share, one_more, share
from safeport.errors import Denied, JournalUnavailable
from tests.action_gateway.approvals.test_approvals_unit import (
    INIT,
    Clock,
    Journal,
    Liveness,
    proc,
    request,
)


def test_a_single_human_keeps_the_whole_limit_and_several_share_it() -> None:
    assert share(32, 1) == 32
    assert share(32, 2) == 16
    assert share(32, 3) == 11  # rounded up; the others' shares still leave room
    assert share(1, 4) == 1
    assert one_more(held_by_uid=31, held_by_all=31, ceiling=32, humans=1).fits
    full = one_more(held_by_uid=32, held_by_all=32, ceiling=32, humans=1)
    assert not full.fits and full.whose == "all"  # one human: the gateway's limit is named
    # Two humans: alice at her share is refused, bob still fits.
    alice = one_more(held_by_uid=16, held_by_all=16, ceiling=32, humans=2)
    assert alice.reason("connections") == "this user has 16 connections, the most one user may have"
    assert one_more(held_by_uid=0, held_by_all=16, ceiling=32, humans=2).fits
    everyone = one_more(held_by_uid=1, held_by_all=32, ceiling=32, humans=3)
    assert not everyone.fits and everyone.whose == "all"
    assert at_share({1: 11, 2: 10, 3: 11}, 32, 3) == {1, 3}


def _requester(uid: int, pid: int) -> PeerIdentity:
    return PeerIdentity(uid=uid, gid=uid, chain=(proc(pid, "python3"), INIT))


def _fill_cards(approvals: Approvals, uid: int, count: int, first_pid: int) -> None:
    for n in range(count):
        who = _requester(uid, first_pid + n)
        threading.Thread(target=lambda who=who: _quiet_obtain(approvals, who), daemon=True).start()


def _quiet_obtain(approvals: Approvals, who: PeerIdentity) -> None:
    # Voided at the end of the test; the timeout only has to outlast a slow test run.
    with contextlib.suppress(Denied):
        approvals.obtain(who, request(), vault_epoch=1, timeout_s=120, session_max_s=60)


def _wait_cards(approvals: Approvals, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(approvals.cards()) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(approvals.cards()) == count


def test_one_uids_requesters_fill_only_their_share_of_the_waiting_cards() -> None:
    approvals = Approvals(Journal(), Liveness(), clock=Clock(), humans=2)
    try:
        _fill_cards(approvals, 1000, MAX_PENDING_CARDS // 2, 2000)
        _wait_cards(approvals, 16)
        with pytest.raises(ApprovalRefused, match="this user has 16 waiting approvals"):
            approvals.obtain(_requester(1000, 3000), request(), vault_epoch=1, timeout_s=1,
                             session_max_s=60)  # fmt: skip
        _fill_cards(approvals, 1001, 1, 4000)  # the other human still gets a card
        _wait_cards(approvals, 17)
        assert {card.requester.uid for card in approvals.cards()} == {1000, 1001}
    finally:
        approvals.void_all("test over")


def test_a_single_human_may_have_every_waiting_card() -> None:
    approvals = Approvals(Journal(), Liveness(), clock=Clock(), humans=1)
    try:
        _fill_cards(approvals, 1000, MAX_PENDING_CARDS, 2000)
        _wait_cards(approvals, MAX_PENDING_CARDS)
        with pytest.raises(ApprovalRefused, match="too many approvals are waiting"):
            approvals.obtain(_requester(1000, 3000), request(), vault_epoch=1, timeout_s=1,
                             session_max_s=60)  # fmt: skip
    finally:
        approvals.void_all("test over")


def test_a_credentials_rate_cap_is_shared_per_uid() -> None:
    clock = Clock()
    rates = RateLimiter(clock, humans=2)
    for _ in range(3):
        rates.take("key", 6, 1000)
    with pytest.raises(Denied, match="the most one user may have"):
        rates.take("key", 6, 1000)
    for _ in range(3):
        rates.take("key", 6, 1001)  # the other human's half is untouched
    with pytest.raises(Denied, match="over its cap of 6"):
        rates.take("key", 6, 1001)
    clock.now += 60
    rates.take("key", 6, 1000)
    alone = RateLimiter(clock, humans=1)
    for _ in range(6):
        alone.take("key", 6, 1000)  # one human: the whole cap


def test_refusals_past_the_budget_are_counted_per_uid_and_category_until_the_window_ends() -> None:
    clock, wall = Clock(), Clock()
    budget = RefusalBudget(full_per_window=3, window_s=60, clock=clock, wall=wall)
    assert [budget.admit(1000, "caller") for _ in range(5)] == [True] * 3 + [False] * 2
    assert budget.admit(1001, "caller")  # another uid's budget is its own
    wall.now += 5
    budget.admit(1000, "rate")
    assert budget.due() == []  # the window is still open
    assert budget.counted == 3
    clock.now += 60
    tallies = sorted(budget.due(), key=lambda t: t.category)
    assert [(t.uid, t.category, t.count) for t in tallies] == [
        (1000, "caller", 2),
        (1000, "rate", 1),
    ]
    assert budget.admit(1000, "caller")  # a new window, a new budget
    budget.put_back(tallies)  # not written: kept for the next flush
    assert budget.counted == 3 and len(budget.due(everything=True)) == 2


def test_a_uids_whole_records_are_bounded_in_bytes_as_well_as_in_number() -> None:
    """A requester pads what its records hold (its environment, its command line): past its
    bytes, a uid's records are counted, however few they are; small ones still fit."""
    clock, wall = Clock(), Clock()
    budget = RefusalBudget(full_per_window=20, bytes_per_window=1000, clock=clock, wall=wall)
    assert [budget.admit(1000, "caller", 400) for _ in range(3)] == [True, True, False]
    assert budget.admit(1000, "caller", 150)  # an ordinary record still fits in what is left
    assert not budget.admit(1000, "caller", 5000)  # one record over the whole budget: counted
    assert budget.admit(1001, "caller", 900)  # another uid's bytes are its own
    clock.now += 60
    assert budget.admit(1000, "caller", 900)  # a new window, new bytes
    assert record_size({"a": "é"}) == len('{"a":"é"}'.encode())


def test_the_free_space_check_reads_the_folder(tmp_path: Path) -> None:
    folder = tmp_path
    assert JournalSpace(folder, reserve_bytes=0).low_reason() is None
    low = JournalSpace(folder, reserve_bytes=2**62).low_reason()
    assert low is not None and "almost full" in low
    view = JournalSpace(folder, reserve_bytes=2**62).view()
    assert view.low is True and view.free_bytes > 0 and view.refusals_counted == 0


class JournalThatFails:
    """Takes ``room`` records, then fails as a full disk would."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.written: list[str] = []

    def record(self, kind: str, body: dict[str, object]) -> None:
        if len(self.written) == self.room:
            raise JournalUnavailable("journal actions.jsonl could not be written")
        self.written.append(kind)


def test_tallies_a_failing_journal_did_not_take_are_kept_and_the_failure_is_raised() -> None:
    clock, wall = Clock(), Clock()
    budget = RefusalBudget(full_per_window=0, window_s=60, clock=clock, wall=wall)
    for category in ("caller", "rate", "junk"):
        budget.admit(1000, category)
    clock.now += 60
    journal = JournalThatFails(room=1)
    with pytest.raises(JournalUnavailable):
        _flush_tallies(budget, cast(DurableJournal, journal), lambda c: f"{c}_many", False)
    assert len(journal.written) == 1
    kept = budget.due(everything=True)
    assert len(kept) == 2 and sum(t.count for t in kept) == 2  # nothing counted twice or lost
    # The legitimate flush: a journal with room takes every tally, and none is kept.
    for category in ("caller", "rate"):
        budget.admit(1000, category)
    clock.now += 60
    roomy = JournalThatFails(room=10)
    _flush_tallies(budget, cast(DurableJournal, roomy), lambda c: f"{c}_many", False)
    assert (
        sorted(roomy.written) == ["caller_many", "rate_many"] and budget.due(everything=True) == []
    )
