"""A record's time and kind are formatted once and reused, and never wrong for it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from safeport.errors import AuditError
from safeport.shared.audit.members import KindNames, Timestamps


def _expected(now: float) -> str:
    seconds = int(now)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{int((now - seconds) * 1_000_000):06d}Z"


def test_timestamps_follow_the_clock_across_seconds_days_and_years() -> None:
    moments = iter(
        [
            1_767_225_599.999_999,  # the last microsecond of 2025
            1_767_225_600.0,
            1_767_225_600.000_001,
            1_767_225_601.5,
            1_767_225_601.25,
            86_399.000_5,  # back in time: a clock that was set back
        ]
    )
    expected: list[str] = []

    def clock() -> float:
        now = next(moments)
        expected.append(_expected(now))
        return now

    stamps = Timestamps(clock)
    seen = [json.loads(stamps.now()) for _ in range(6)]
    assert seen == expected
    assert seen[0] == "2025-12-31T23:59:59.999999Z" and seen[1] == "2026-01-01T00:00:00.000000Z"


def test_a_timestamp_matches_strftime_for_now() -> None:
    now = time.time()
    assert json.loads(Timestamps(lambda: now).now()) == _expected(now)


def test_a_kind_is_checked_before_it_is_remembered() -> None:
    kinds = KindNames()
    assert kinds.json("action.intent") == b'"action.intent"'
    assert kinds.json("action.intent") == b'"action.intent"'
    for bad in ['x","seq":1', "Action", "a" * 65, "", "a\n"]:
        with pytest.raises(AuditError):
            kinds.json(bad)
        with pytest.raises(AuditError):  # still refused the second time
            kinds.json(bad)


def test_the_kind_memory_is_bounded_and_later_kinds_still_work() -> None:
    kinds = KindNames()
    for index in range(1000):
        assert kinds.json(f"k{index}") == b'"k%d"' % index
    assert len(kinds._known) <= 256
