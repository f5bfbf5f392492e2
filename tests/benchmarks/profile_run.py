"""Run a benchmark's short profile the way CI does, and read the figures it reports."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def run_quick_profile(script: str, *extra: str) -> dict[str, Any]:
    """``python benchmarks/<script> --quick --json``: its one JSON object, printed for ``-s``."""
    run = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--quick", "--json", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    figures: dict[str, Any] = json.loads(run.stdout)
    print(json.dumps(figures, sort_keys=True))
    return figures


def positive(value: object) -> bool:
    """A measured figure: a finite number above zero (no limit on how large)."""
    return isinstance(value, int | float) and math.isfinite(value) and value > 0
