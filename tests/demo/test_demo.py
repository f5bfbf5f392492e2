"""`sp demo` runs the whole boundary end to end on a fresh home and checks its own promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from safeport.shared.launch import sp_command
from tests.hostile_folder import plant

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.demo"


def test_the_demo_keeps_every_promise_it_checks(tmp_path: Path) -> None:
    # Run from a folder full of hostile code: none of the demo's processes may import it.
    hostile = plant(tmp_path / "cloned-repo", tmp_path / "marks")
    # A short private TMPDIR: socket paths under pytest's long tmp_path exceed sun_path.
    temp = Path(tempfile.mkdtemp(prefix="sp-"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("SAFEPORT_")}
    env["TMPDIR"] = str(temp)
    done = subprocess.run(
        sp_command(["demo", "--yes", "--keep"]),
        capture_output=True,
        text=True,
        env=env,
        cwd=hostile.root,
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
    assert hostile.ran() == []
    # --keep keeps the folder it names, with the home, the workspace and the journals in it.
    kept = re.search(r"files kept in (\S+) \(SAFEPORT_HOME=(\S+)\)", out)
    assert kept is not None, out[-500:]
    folder, home = Path(kept.group(1)), Path(kept.group(2))
    assert folder.parent == temp and home.is_dir()
    try:
        assert list(home.rglob("actions.jsonl")) and list(folder.rglob("*.py"))
    finally:
        shutil.rmtree(temp)
