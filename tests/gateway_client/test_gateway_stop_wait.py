"""The wait after `sp gateway stop` ends, bounded, and says what is still there."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from safeport.gateway_client.gateway_exit import wait_for_exit
from safeport.shared.paths import layout


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_process_that_keeps_running_ends_the_wait_at_its_bound(tmp_path: Path) -> None:
    paths = layout({"SAFEPORT_HOME": str(tmp_path)})
    clock = _Clock()
    left = wait_for_exit(paths, os.getpid(), 2.0, clock=clock, sleep=clock.sleep)
    assert not left.done and not left.process_gone and left.sockets_gone
    assert 2.0 <= clock.now < 2.2
    assert left.remaining() == "its process is still running"


def test_a_socket_left_behind_keeps_the_stop_unfinished(tmp_path: Path) -> None:
    paths = layout({"SAFEPORT_HOME": str(tmp_path)})
    paths.run_dir.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(paths.control_socket))
    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    clock = _Clock()
    try:
        left = wait_for_exit(paths, int(exited.stdout), 1.0, clock=clock, sleep=clock.sleep)
    finally:
        listener.close()
    assert left.process_gone and not left.sockets_gone and not left.done
    assert left.remaining() == "its sockets are still there"
    paths.control_socket.unlink()
    gone = wait_for_exit(paths, int(exited.stdout), 1.0, clock=clock, sleep=clock.sleep)
    assert gone.done
