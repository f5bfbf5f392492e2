"""Legitimate load under a junk flood (the drill in harness/load.py, at full size).

    python benchmarks/bench_load.py [--clients 50] [--per-client 100] [--idle 1000]

Starts a real gateway (test harness: in-memory vault, stub executor, sealed journals off),
approves one session per client, then runs every client's proposals back to back while a flood
process holds ``--idle`` silent sockets (4 in 5 on agent.sock) and sends garbage frames, 4 GiB
length prefixes, slowloris headers and connect/close churn. Prints one JSON object: answered,
failures, p50/p99 latency, throughput, the slowest ``status`` probe and the ``vault.lock``
latency during the flood, and what the flood sent. Quote the load average beside it.
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

from harness.load import run_load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--per-client", type=int, default=100)
    parser.add_argument("--idle", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sp-load-") as tmp:
        home = Path(tmp) / "h"
        home.mkdir(mode=0o700)
        figures = run_load(home, clients=args.clients, per_client=args.per_client, idle=args.idle)
    figures["load_average"] = os.getloadavg()
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
