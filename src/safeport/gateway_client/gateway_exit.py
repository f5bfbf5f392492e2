"""Waiting for a stopped gateway to be gone: its process exited and its sockets removed.

`sp gateway stop` only asks; the gateway then closes its sockets, journals the stop and locks
the vault before its process ends. A script that runs `sp gateway stop && sp gateway run` must
not find the old one still holding the instance lock, so the command waits, bounded, for both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from safeport.errors import Denied
from safeport.shared.paths import SafeportPaths

STOP_WAIT_S = 30.0


class GatewayDidNotStop(Denied):
    """Asked to stop, the gateway was still there when the wait ended: a failure to report."""


@dataclass(frozen=True)
class Stopped:
    """What was left when the wait ended."""

    process_gone: bool
    sockets_gone: bool

    @property
    def done(self) -> bool:
        return self.process_gone and self.sockets_gone

    def remaining(self) -> str:
        """What is still there, in words, for the message of a stop that did not finish."""
        left = [] if self.process_gone else ["its process is still running"]
        left += [] if self.sockets_gone else ["its sockets are still there"]
        return " and ".join(left)


def wait_for_exit(
    paths: SafeportPaths,
    pid: int,
    timeout_s: float = STOP_WAIT_S,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Stopped:
    """Wait until process ``pid`` has exited and the gateway's sockets are removed, at most
    ``timeout_s`` seconds; say what was left."""
    process = _process(pid)
    deadline = clock() + timeout_s
    while True:
        state = Stopped(not _alive(process), not _sockets_left(paths))
        if state.done or clock() >= deadline:
            return state
        sleep(0.05)


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:  # gone already (or never visible to this user)
        return None


def _alive(process: psutil.Process | None) -> bool:
    if process is None:
        return False
    try:
        # is_running() compares the start time too, so a pid reused by another process after
        # the gateway ended counts as gone; a zombie has exited and only awaits its parent.
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _sockets_left(paths: SafeportPaths) -> bool:
    return paths.control_socket.exists() or paths.agent_socket.exists()
