"""Run `sp` in a subprocess against a SAFEPORT_HOME, the way a person would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def run_sp(
    *args: str,
    home: Path,
    stdin: bytes | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAFEPORT_")}
    env["SAFEPORT_HOME"] = str(home)
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "safeport", *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )
