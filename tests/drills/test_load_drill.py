"""Legitimate load on session grants while a junk flood hits both sockets (see load.py).

CI runs a small profile (8 clients x 50 proposals, 200 idle sockets, about 15 s); the full one
is ``python benchmarks/bench_load.py`` (50 x 100, 1,000 idle sockets).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.load import CONTROL_BUDGET_S, run_load


def test_every_legitimate_proposal_is_answered_and_the_human_gets_through_a_junk_flood(
    drill_home: Path,
) -> None:
    figures = run_load(drill_home, clients=8, per_client=50, idle=200)
    print(json.dumps(figures, sort_keys=True))  # the figures, with -s
    assert figures["failures"] == 0, figures["first_failures"]
    assert figures["answered"] == 8 * 50
    assert figures["control_probes"] > 0 and figures["cli_probes"] > 0
    # The human's lock got through the flood: that is the behaviour. How fast (the 1 s target)
    # is `python benchmarks/bench_load.py`'s figure; here the bound is generous for busy cores.
    # The status probes' errors and slowest replies are reported, not asserted: on a starved
    # CPU the flood can still cost a human connection (docs/security/guarantees.md, not guaranteed).
    assert figures["lock_ms"] < 10 * CONTROL_BUDGET_S * 1000
    # The flood was real: it held its idle sockets, and the gateway saw and counted its junk.
    assert figures["idle_held_at_start"] >= 180
    flood = figures["flood"]
    assert flood["garbage"] > 0 and flood["oversized"] > 0 and flood["slowloris"] > 0
    assert figures["input_refused_records"] > 0
