"""`sp ssh scan` against a real sshd: keys and fingerprints to pin, nothing trusted."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys

import pytest

from harness.real_sshd import Sshd, free_port

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.ssh"

pytestmark = pytest.mark.integration


def _sp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_scan_prints_the_key_its_fingerprint_and_the_pin_line(sshd: Sshd) -> None:
    run = _sp("ssh", "scan", f"127.0.0.1:{sshd.port}")
    assert run.returncode == 0, run.stderr
    key_type, b64 = sshd.host_key_line.split()[:2]
    digest = base64.b64encode(hashlib.sha256(base64.b64decode(b64)).digest()).decode()
    assert f"SHA256:{digest.rstrip('=')}  {key_type}" in run.stdout
    assert f'"{key_type} {b64}",' in run.stdout
    assert "not trusted, not saved" in run.stdout
    assert "restrict,from=" in run.stdout
    assert run.stderr == ""


def test_scan_json_matches_what_the_server_holds(sshd: Sshd) -> None:
    run = _sp("ssh", "scan", "--json", f"127.0.0.1:{sshd.port}")
    assert run.returncode == 0, run.stderr
    keys = json.loads(run.stdout)["keys"]
    assert [f"{k['type']} {k['base64']}" for k in keys] == [
        " ".join(sshd.host_key_line.split()[:2])
    ]


def test_scan_of_a_closed_port_is_an_environment_error() -> None:
    run = _sp("ssh", "scan", f"127.0.0.1:{free_port()}", "--timeout", "2")
    assert run.returncode == 2
    assert "connection refused" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("target", ["host:99999", "a:b:c", "-oProxyCommand=x", "bad host"])
def test_scan_refuses_a_target_that_is_not_host_and_port(target: str) -> None:
    run = _sp("ssh", "scan", "--", target)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr


def test_scan_help_explains_checking_the_fingerprint_and_confining_the_key() -> None:
    run = _sp("ssh", "scan", "--help")
    assert run.returncode == 0
    assert "Nothing is trusted or saved" in run.stdout
    assert "restrict" in run.stdout and "command=" in run.stdout
