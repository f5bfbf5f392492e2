"""The demo's approval prompt has no default either: Enter alone asks again."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from safeport.shared.launch import sp_command
from tests.cli.terminal import Terminal

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"


def test_the_demo_asks_y_or_n_without_a_default() -> None:
    temp = Path(tempfile.mkdtemp(prefix="sp-"))  # short: socket paths have a length limit
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAFEPORT_")}
    env["TMPDIR"] = str(temp)
    try:
        term = Terminal(sp_command(["demo"]), env)
        term.expect("approve this card? [y/n]:", timeout=120)
        assert "[Y/n]" not in term.seen
        term.type("")  # Enter alone is no answer: the question comes again
        term.expect("approve this card? [y/n]:", times=2)
        term.type("y")
        assert term.wait(timeout=180) == 0, term.seen[-2000:]
        assert "demo complete:" in term.seen
    finally:
        shutil.rmtree(temp, ignore_errors=True)
