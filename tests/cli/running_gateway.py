"""A real `sp gateway run` on a real vault, for CLI tests that need one listening."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.gateway import REPO, clean_env, wait_until
from safeport.shared.launch import sp_command
from tests.action_gateway.test_real_vault_e2e import sp


@contextmanager
def running_gateway(home: Path, *, unlock: bool = True) -> Iterator[subprocess.Popen[str]]:
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]),
        cwd=REPO,
        env=clean_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        if unlock:
            done = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
            assert done.returncode == 0, done.stderr
        yield gateway
    finally:
        if gateway.poll() is None:
            sp(home, "gateway", "stop")
            try:
                gateway.wait(timeout=15)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()
        if gateway.stderr is not None:
            gateway.stderr.close()
