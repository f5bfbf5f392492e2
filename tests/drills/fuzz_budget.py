"""How many examples each property runs: a bounded number in CI, any number on request.

SAFEPORT_FUZZ_EXAMPLES=20000 pytest tests/drills -k fuzz     (a long run)
SAFEPORT_FUZZ_EXAMPLES=20000 pytest tests/drills/test_fuzz_outside_input.py \
    tests/drills/test_fuzz_outside_answers.py tests/drills/test_fuzz_http.py
                                                           (the outside-input parsers alone)
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

# The outside-input parsers' properties: derandomized, so a run in CI is the same run every
# time; a long run is asked for the same way (SAFEPORT_FUZZ_EXAMPLES).
OUTSIDE_EXAMPLES = int(os.environ.get("SAFEPORT_FUZZ_EXAMPLES", "300"))
outside = settings(fuzz, max_examples=OUTSIDE_EXAMPLES, derandomize=True)
