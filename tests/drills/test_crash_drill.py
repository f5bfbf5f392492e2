"""SIGKILL the real gateway at random points and audit what survives (see crash_drill.py).

CI runs a bounded sample (SAFEPORT_DRILL_KILLS, 40 by default: eight rounds of the five modes, so
every mode, a save cut off and a save acknowledged; about a minute on two busy cores); the full
drill is ``SAFEPORT_DRILL_KILLS=1000 pytest tests/drills/test_crash_drill.py`` or
``python -m tests.drills.crash_drill --kills 1000``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.drills.crash_drill import MODES, Drill, audit, kills_from_env

CI_KILLS = 40


def test_every_kill_leaves_verifiable_journals_no_action_without_intent_and_a_sound_vault(
    drill_home: Path,
) -> None:
    kills = kills_from_env(CI_KILLS)
    seed = int(os.environ.get("SAFEPORT_DRILL_SEED", "13"))
    report = Drill(drill_home, seed).run(kills)
    print(json.dumps(report.as_json(), sort_keys=True))  # the figures, with -s
    assert report.kills == kills
    assert set(report.modes) == set(MODES)
    # The drill exercised what it claims: actions ran, some were cut off mid-way, journals
    # rotated, torn tails were recovered, saves were caught in flight and acknowledged.
    assert report.calls > kills and report.acknowledged > kills
    assert report.interrupted > 0 and report.rotations > kills
    assert report.recoveries == report.torn_tails > 0
    assert report.saves_in_flight > 0 and report.saves_acknowledged > 0
    assert report.calls_without_intent == 0


@pytest.fixture(scope="module")
def small_drill(tmp_path_factory: pytest.TempPathFactory) -> Drill:
    home = tmp_path_factory.mktemp("d") / "h"
    home.mkdir(mode=0o700)
    drill = Drill(home, seed=7)
    drill.run(5)
    return drill


def _call_file(drill: Drill, name: str, **call: object) -> Path:
    path = drill.calls_dir / name
    path.write_text(json.dumps(call))
    return path


def test_the_audit_finds_an_executor_call_with_no_intent(small_drill: Drill) -> None:
    extra = _call_file(small_drill, "9-000000.json", digest="0" * 64, what="?", actions_bytes=1)
    try:
        with pytest.raises(AssertionError):
            audit(small_drill)
    finally:
        extra.unlink()
    audit(small_drill)  # and passes again without it


def test_the_audit_finds_a_call_that_began_before_its_intent_was_written(
    small_drill: Drill,
) -> None:
    calls = sorted(small_drill.calls_dir.glob("[0-9]*.json"))
    original = calls[-1].read_text()
    early = {**json.loads(original), "actions_bytes": 0}
    calls[-1].write_text(json.dumps(early))
    try:
        with pytest.raises(AssertionError):
            audit(small_drill)
    finally:
        calls[-1].write_text(original)


def test_the_audit_finds_an_action_that_ran_twice(small_drill: Drill) -> None:
    calls = sorted(small_drill.calls_dir.glob("[0-9]*.json"))
    twin = _call_file(small_drill, "9-000001.json", **json.loads(calls[-1].read_text()))
    try:
        with pytest.raises(AssertionError, match="more than once"):
            audit(small_drill)
    finally:
        twin.unlink()


def test_the_audit_finds_a_torn_tail_left_unrecovered(small_drill: Drill) -> None:
    small_drill.report.torn_tails += 1
    try:
        with pytest.raises(AssertionError):
            audit(small_drill)
    finally:
        small_drill.report.torn_tails -= 1
