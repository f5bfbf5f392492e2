"""Ctrl-C stops the README's test command: the run and its two xdist workers end within a bound,
the summary line is printed, and no server a test started is left running.

A real pytest run, configured as the README's command is (the repository's pyproject: two
workers, each file whole on one), runs two slow tests, one holding a real gateway (a per-test
fixture) and one holding the session's PostgreSQL. Once both are inside their test, a SIGINT goes
to the run's whole process group, as a terminal's Ctrl-C does. The run is watched from a small
process that makes itself the child subreaper, so every process the run started, even one that
left the group or the session, is found afterwards among its descendants.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from harness.gateway import REPO
from harness.real_postgres import INITDB
from tests.conftest import need

# The whole run, from Ctrl-C to exit, on a loaded two-core machine: xdist gives a worker 10 s to
# finish its teardown before it stops it; the rest is a generous bound, never a measurement.
STOP_BOUND_S = 90

HOLDS_A_GATEWAY = """
import os, time
from pathlib import Path

def test_holds_a_gateway(gateway):
    Path(os.environ["SP_READY_DIR"], "gateway").touch()
    time.sleep(120)
"""

HOLDS_POSTGRES = """
import os, time
from pathlib import Path

def test_holds_postgres(postgres):
    Path(os.environ["SP_READY_DIR"], "postgres").touch()
    time.sleep(120)
"""

# Runs the pytest command, interrupts it once both tests are running, and reports as JSON: its
# exit status, the seconds from Ctrl-C to exit, its output, and every descendant still alive.
WATCHER = r"""
import ctypes, json, os, signal, subprocess, sys, time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
ready, bound, to, argv = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
# As a terminal's shell starts a command: with Ctrl-C's signal at its default. A suite started
# in the background of a shell without job control (`cmd &`, `nohup cmd &`) runs with SIGINT
# ignored, which every process it starts inherits, and then no Ctrl-C could stop this run.
signal.signal(signal.SIGINT, signal.SIG_DFL)
run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       start_new_session=True)

def alive_descendants():
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append((int(entry.name), command[:200]))
    found, todo = [], [os.getpid()]
    while todo:
        for pid, command in children.get(todo.pop(), []):
            found.append([pid, command])
            todo.append(pid)
    return found

def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return

deadline = time.monotonic() + 240
while len(list(ready.iterdir())) < 2 and run.poll() is None and time.monotonic() < deadline:
    time.sleep(0.2)
started = sorted(p.name for p in ready.iterdir())
interrupted = time.monotonic()
if to == "group":
    os.killpg(run.pid, signal.SIGINT)  # a terminal's Ctrl-C: every process in the foreground
else:
    os.kill(run.pid, signal.SIGINT)  # a wrapper or a CI runner that signals its child alone
try:
    output, _ = run.communicate(timeout=bound)
    seconds = time.monotonic() - interrupted
except subprocess.TimeoutExpired:
    os.killpg(run.pid, signal.SIGKILL)
    output, _ = run.communicate()
    seconds = None
# A server's own shutdown may still be finishing; what is left after a short, bounded wait
# stays behind.
settle = time.monotonic() + 15
left = alive_descendants()
while left and time.monotonic() < settle:
    time.sleep(0.2)
    reap()
    left = alive_descendants()
for pid, _ in left:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
reap()
print(json.dumps({"started": started, "status": run.returncode, "seconds": seconds,
                  "output": output, "left": left}))
"""


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")
@pytest.mark.parametrize("to", ["group", "run"])
def test_ctrl_c_stops_the_run_and_its_workers_with_a_summary_and_leaves_no_server(
    tmp_path: Path, to: str
) -> None:
    need(INITDB is not None, "PostgreSQL is not installed (apt install postgresql)")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_holds_a_gateway.py").write_text(textwrap.dedent(HOLDS_A_GATEWAY))
    (suite / "test_holds_postgres.py").write_text(textwrap.dedent(HOLDS_POSTGRES))
    ready = tmp_path / "ready"
    ready.mkdir()
    watcher = tmp_path / "watch.py"
    watcher.write_text(WATCHER)
    # The README's command, on these two files: the repository's configuration (two workers,
    # loadfile) and its fixtures (tests/conftest.py, loaded as a plugin). Its temporary folders
    # are its own and short (a gateway's socket path has a length limit), so it rotates none of
    # the shared numbered ones.
    base = Path(tempfile.mkdtemp(prefix="sp-int-"))
    argv = [
        sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir",
        str(suite), "--basetemp", str(base / "t"), "-p", "tests.conftest",
        "-p", "no:cacheprovider", str(suite),
    ]  # fmt: skip
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": str(tmp_path),
        "SP_READY_DIR": str(ready),
    }
    try:
        done = subprocess.run(
            [sys.executable, str(watcher), str(ready), str(STOP_BOUND_S), to, *argv],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=STOP_BOUND_S + 300,
        )  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    output = report["output"]
    assert report["started"] == ["gateway", "postgres"], output
    assert report["seconds"] is not None, f"still running {STOP_BOUND_S} s after Ctrl-C: {output}"
    assert report["status"] == 2, output  # pytest's "interrupted"
    assert "KeyboardInterrupt" in output, output
    last = output.strip().splitlines()[-1]
    assert last.startswith("=") and " in " in last and last.endswith("="), output
    assert report["left"] == [], f"left running after Ctrl-C: {report['left']}\n{output}"
