"""Context servers under load while the workspace changes (harness/context_load.py, full).

    python benchmarks/bench_context_load.py [--clients 8] [--seconds 60] [--files 20000]

Prints one JSON object: calls, errors (must be 0), p50/p99, calls per second, each server's
RSS after the warm-up and at the end (growth), and how many files changed underneath.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.context_load import run_context_load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--files", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sp-ctx-load-") as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "home"
        workspace.mkdir()
        home.mkdir(mode=0o700)
        figures = run_context_load(
            workspace, home, files=args.files, clients=args.clients, seconds=args.seconds
        )
    figures["load_average"] = os.getloadavg()
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
