"""How long `sp` takes to start, beside the interpreter starting and doing nothing.

    python benchmarks/bench_startup.py [--runs 20]

Each command is run as a new process, as a shell runs it: `python -c pass` (the floor no
Python program can go under), `sp --version`, `sp --help`, a subcommand's `--help` (which
imports only that command's module) and a shell completion request. Reports the median and
the worst wall time of ``--runs`` runs, alternating the commands so load hits all alike, and
the goal (≤ 0.3 s for --version and --help).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

SP = str(Path(sys.executable).parent / "sp")
GOAL_S = 0.3

COMMANDS: dict[str, tuple[list[str], dict[str, str]]] = {
    "python -c pass": ([sys.executable, "-c", "pass"], {}),
    "sp --version": ([SP, "--version"], {}),
    "sp --help": ([SP, "--help"], {}),
    "sp vault --help": ([SP, "vault", "--help"], {}),
    "completion (sp vau<TAB>)": (
        [SP],
        {"_SP_COMPLETE": "bash_complete", "COMP_WORDS": "sp vau", "COMP_CWORD": "1"},
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, (argv, extra) in COMMANDS.items():
            env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), **extra}
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=False)
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["python -c pass"])
    failed = False
    for name, samples in times.items():
        median, worst = statistics.median(samples), max(samples)
        goal = ""
        if name in ("sp --version", "sp --help"):
            met = median <= GOAL_S
            failed |= not met
            goal = f"  goal <= {GOAL_S:.1f} s {'met' if met else 'MISSED'}"
        print(
            f"{name:<26} median {median * 1000:7.1f} ms  worst {worst * 1000:7.1f} ms  "
            f"{median / floor:5.1f}x python -c pass{goal}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
