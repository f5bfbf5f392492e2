"""How many examples each property runs: a bounded number in CI, any number on request.

SAFEPORT_FUZZ_EXAMPLES=20000 pytest tests/drills -k fuzz     (a long run)
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("SAFEPORT_FUZZ_EXAMPLES", "150"))

# No deadline: two busy cores make timings meaningless; no database: a run proves only itself.
fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
