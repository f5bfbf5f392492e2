"""Dedicated-account mode on a machine without systemd, with real OS accounts.

`sp gateway install --init script` writes the start script that docs/guides/dedicated-account.md
has an init system run; here root runs it as that init system would (in the foreground), and
the gateway it becomes runs as its account with the two read capabilities and nothing more,
answers the human named in the install, and stops on SIGTERM.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.action_gateway.dedicated import (
    PASSPHRASE,
    DedicatedSetup,
    install,
    make_setup,
    missing_parts,
    tear_down,
    unique,
)
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.install"

pytestmark = pytest.mark.integration

# CAP_DAC_READ_SEARCH is 2, CAP_SYS_PTRACE is 19: the unit's AmbientCapabilities.
GATEWAY_CAPS = (1 << 2) | (1 << 19)


@pytest.fixture(scope="module")
def setup() -> Iterator[DedicatedSetup]:
    missing = missing_parts()
    need(not missing, f"{', '.join(missing)}: needed for real OS accounts")
    made = make_setup([unique("spnl")])
    try:
        [alice] = made.humans.values()
        done = install(made, alice.name, init="script")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "init system run" in done.stdout
        alice.write("pw", PASSPHRASE + "\n")
        yield made
    finally:
        tear_down(made)


def _start(setup: DedicatedSetup) -> subprocess.Popen[str]:
    """Root runs the start script with an init system's bare environment."""
    script = setup.prefix / "etc/safeport/gateway-start"
    log = (setup.base / "gateway.stderr").open("a")
    started = subprocess.Popen(
        [str(script)], cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, stderr=log, text=True
    )
    log.close()
    return started


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def test_the_start_script_runs_the_gateway_as_its_account_with_only_the_read_capabilities(
    setup: DedicatedSetup,
) -> None:
    [alice] = setup.humans.values()
    script = setup.prefix / "etc/safeport/gateway-start"
    st = script.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o755)
    # /run is emptied at boot: the script makes the sockets folder again.
    setup.run_dir.rmdir()
    gateway = _start(setup)
    try:
        deadline = time.monotonic() + 60
        while alice.sp("gateway", "status").returncode != 0:
            assert gateway.poll() is None, setup.gateway_log()
            assert time.monotonic() < deadline, setup.gateway_log()
            time.sleep(0.3)
        # The script replaced itself with the gateway: the pid init watches is the gateway's.
        process = psutil.Process(gateway.pid)
        assert process.uids().real == setup.uid and process.uids().effective == setup.uid
        status = _status(gateway.pid)
        # Nothing beyond the two, ever; the gateway hands CAP_SYS_PTRACE to its inspector and
        # drops it itself, so the two are held together only there.
        assert int(status["CapBnd"], 16) & ~GATEWAY_CAPS == 0
        assert int(status["CapEff"], 16) & ~GATEWAY_CAPS == 0
        assert status["NoNewPrivs"].strip() == "1"
        held = [int(_status(child.pid)["CapEff"], 16) for child in process.children()]
        assert GATEWAY_CAPS in held
        assert "safeport" in " ".join(process.cmdline()) and "gateway" in process.cmdline()
        env = Path(f"/proc/{gateway.pid}/environ").read_bytes().split(b"\0")
        assert b"SAFEPORT_GATEWAY=" + str(setup.install_file).encode() in env
        assert not [v for v in env if v.startswith((b"LD_", b"PYTHON"))]
        folder = setup.run_dir.stat()
        assert (folder.st_uid, folder.st_mode & 0o777) == (setup.uid, 0o750)
        # The human named in the install is served: a vault made through control.sock.
        made = alice.sp("vault", "init", "--passphrase-file", str(alice.passphrase_file))
        assert made.returncode == 0, made.stdout + made.stderr
        vault_owner = pwd.getpwuid(os.stat(setup.state_dir).st_uid).pw_name
        assert vault_owner == setup.account
    finally:
        if gateway.poll() is None:
            gateway.send_signal(signal.SIGTERM)
        assert gateway.wait(30) == 0, setup.gateway_log()


def test_the_start_script_refuses_to_start_when_the_code_check_fails(
    setup: DedicatedSetup,
) -> None:
    # The code check is the first thing: a check file that fails stops the script before the
    # gateway ever runs (as ExecStartPre does for the unit).
    check = setup.prefix / "etc/safeport/check_code.py"
    original = check.read_text()
    check.write_text("raise SystemExit('code check: refused')\n")
    try:
        started = _start(setup)
        assert started.wait(60) != 0
        assert "code check: refused" in setup.gateway_log()
    finally:
        check.write_text(original)
