"""The journal says which step of a deadline kept from the gateway's side ended the remote
work (``stopped_by`` beside the ``timeout`` status), and says nothing of it otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.action_gateway.executors.interface import ActionError
from tests.action_gateway.ladder.test_ladder_rungs import Rig


def _outcome(rig: Rig) -> dict[str, object]:
    outcomes = [body for kind, body, _ in rig.journal.records if kind == "action.outcome"]
    assert len(outcomes) == 1
    return outcomes[0]


@pytest.mark.parametrize("step", ["cancel", "close", "terminate"])
def test_the_step_that_stopped_the_work_is_journaled_with_the_timeout(
    tmp_path: Path, step: str
) -> None:
    rig = Rig(tmp_path)
    rig.executor.failure = ActionError(
        "timeout",
        "the query ran out of time",
        stopped_by=step,  # type: ignore[arg-type]
    )
    refusal = rig.refused()
    assert refusal.code == "upstream"
    outcome = _outcome(rig)
    assert outcome["status"] == "timeout" and outcome["stopped_by"] == step


def test_a_timeout_the_server_kept_itself_and_other_failures_carry_no_step(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.executor.failure = ActionError("timeout", "the query ran out of time")
    rig.refused()
    assert "stopped_by" not in _outcome(rig)
