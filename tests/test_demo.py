"""`sp demo` runs the whole boundary end to end on a fresh home and checks its own promises."""

from __future__ import annotations

import os
import subprocess
import sys


def test_the_demo_keeps_every_promise_it_checks() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAFEPORT_")}
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "demo", "--yes"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "demo complete:" in out and "checks passed" in out
    for promise in (
        "read_file .env: refused",
        "a human answered the card from another process tree: approve",
        "approved, run by the gateway: status 200",
        "vault locked",
        "sp audit verify: every journal's chain is valid",
        "the agent never received the token",
    ):
        assert promise in out, promise
    assert "Traceback" not in done.stderr
