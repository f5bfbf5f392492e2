"""A command's deadline holds from the gateway's side against a real sshd whatever the command
does: ignore INT and TERM while it keeps printing, or leave the process group the KILL signal
reaches. The answer comes within ``timeout_s`` + 2 s, the remote process is gone afterwards
(the sshd host's process list for the test user, polled for a bounded time), and the next
command works."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from harness.real_sshd import Sshd
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import SshCommand, SshHost
from tests.action_gateway.executors.planned import PlannedSsh, PreparingExecutor

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.ssh"

pytestmark = pytest.mark.integration

TIMEOUT_S = 1
CONTRACT_S = TIMEOUT_S + 2.0
_STUBBORN = "trap '' INT TERM HUP; while :; do echo x; sleep 0.1; done"


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor())
    yield executor
    executor.close_all()


def _host(sshd: Sshd) -> SshHost:
    return SshHost.model_validate(
        {
            "address": "127.0.0.1",
            "port": sshd.port,
            "user": sshd.user,
            "host_keys": [sshd.host_key_line],
            "credential": "build-key",
            "connect_timeout_s": 5,
        }
    )


def _run(sshd: Sshd, argv: list[str]) -> PlannedSsh:
    command = SshCommand.model_validate({"argv": argv, "timeout_s": TIMEOUT_S})
    return PlannedSsh("build", _host(sshd), "cmd", command, {})


def _running(sshd: Sshd, tag: str) -> bool:
    found = subprocess.run(
        ["pgrep", "-u", sshd.user, "-f", tag], capture_output=True, check=False, timeout=10
    )
    return found.returncode == 0


def _gone(sshd: Sshd, tag: str, within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while _running(sshd, tag):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def _timed_out(executor: PreparingExecutor, sshd: Sshd, argv: list[str]) -> ActionError:
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.ssh_exec(_run(sshd, argv), sshd.secret())
    elapsed = time.monotonic() - started
    assert caught.value.failure == "timeout"
    assert elapsed <= CONTRACT_S, elapsed
    return caught.value


@pytest.mark.parametrize(
    ("shape", "steps"),
    [
        # Ignores INT and TERM, prints forever: the KILL signal to its process group ends it.
        ("plain", {"cancel"}),
        # Its own session, out of the signal's reach, printing forever: closing the channel
        # breaks its pipe.
        ("setsid", {"close"}),
        # Out of reach and silent for a while between lines: the next line breaks the pipe.
        ("setsid-slow", {"close"}),
    ],
)
def test_a_command_that_ignores_signals_is_stopped_in_time_and_is_gone_after(
    sshd: Sshd, executor: PreparingExecutor, shape: str, steps: set[str]
) -> None:
    tag = f"sp-deadline-{uuid.uuid4().hex[:12]}"
    script = _STUBBORN if shape != "setsid-slow" else _STUBBORN.replace("0.1", "1")
    argv = ["sh", "-c", script, tag]
    if shape.startswith("setsid"):
        argv = ["setsid", *argv]
    assert executor.ssh_exec(_run(sshd, ["true"]), sshd.secret()).exit_status == 0
    assert executor.pooled_ssh_connections == 1
    error = _timed_out(executor, sshd, argv)
    assert error.stopped_by in steps
    assert _gone(sshd, tag), f"{shape}: the remote command still runs"
    if error.stopped_by == "close":
        assert executor.pooled_ssh_connections == 0  # its transport dropped, not pooled
    assert executor.ssh_exec(_run(sshd, ["true"]), sshd.secret()).exit_status == 0


def test_a_command_within_its_time_keeps_its_transport_pooled(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    for _ in range(3):
        result = executor.ssh_exec(_run(sshd, ["sh", "-c", "sleep 0.3; echo done"]), sshd.secret())
        assert result.exit_status == 0 and result.stdout == "done\n"
    assert executor.pooled_ssh_connections == 1
