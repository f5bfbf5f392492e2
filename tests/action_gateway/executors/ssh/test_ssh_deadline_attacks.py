"""A command's deadline against a peer that stalls before or under the command: a server that
never finishes its banner or its key exchange, or an sshd session process stopped by the
operating system. The answer comes within ``timeout_s`` + 2 s of the call, whatever the host's
``connect_timeout_s``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from harness.real_sshd import Sshd
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import SshCommand, SshHost
from tests.action_gateway.executors.hostile_ssh import (
    banner_then_silence,
    running_raw_server,
    trickle_banner,
)
from tests.action_gateway.executors.planned import PlannedSsh, PreparingExecutor
from tests.action_gateway.executors.ssh.test_ssh_deadline import CONTRACT_S, TIMEOUT_S

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.ssh"

pytestmark = pytest.mark.integration


@pytest.fixture
def executor() -> Iterator[PreparingExecutor]:
    executor = PreparingExecutor(GatewayExecutor())
    yield executor
    executor.close_all()


def _planned(sshd: Sshd, port: int, argv: list[str]) -> PlannedSsh:
    host = SshHost.model_validate(
        {
            "address": "127.0.0.1",
            "port": port,
            "user": sshd.user,
            "host_keys": [sshd.host_key_line],
            "credential": "build-key",
            "connect_timeout_s": 10,  # longer than the command's own deadline
        }
    )
    command = SshCommand.model_validate({"argv": argv, "timeout_s": TIMEOUT_S})
    return PlannedSsh("build", host, "cmd", command, {})


def _timed(executor: PreparingExecutor, sshd: Sshd, planned: PlannedSsh) -> ActionError:
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.ssh_exec(planned, sshd.secret())
    elapsed = time.monotonic() - started
    assert elapsed <= CONTRACT_S, elapsed
    return caught.value


def _silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(30)


@pytest.mark.parametrize(
    "behaviour", [_silent, trickle_banner, banner_then_silence], ids=lambda b: b.__name__
)
def test_a_server_that_stalls_the_handshake_is_given_up_on_within_the_command_deadline(
    sshd: Sshd,
    executor: PreparingExecutor,
    behaviour: Callable[[socket.socket, threading.Event], None],
) -> None:
    with running_raw_server(behaviour) as port:
        error = _timed(executor, sshd, _planned(sshd, port, ["true"]))
    assert error.failure in {"timeout", "unreachable"}
    assert executor.pooled_ssh_connections == 0


def _session_processes(sshd: Sshd) -> set[int]:
    """The test user's sshd processes (the unprivileged half of each session)."""
    found = subprocess.run(
        ["pgrep", "-u", sshd.user, "sshd"], capture_output=True, check=False, timeout=10
    )
    return {int(pid) for pid in found.stdout.split()}


def test_an_sshd_session_stopped_by_the_operating_system_still_gets_an_answer_in_time(
    sshd: Sshd, executor: PreparingExecutor
) -> None:
    before = _session_processes(sshd)
    planned = _planned(sshd, sshd.port, ["sh", "-c", "echo hi"])
    assert executor.ssh_exec(planned, sshd.secret()).stdout == "hi\n"  # now pooled
    mine = _session_processes(sshd) - before
    assert mine, "no sshd process of the pooled session was found"
    for pid in mine:
        os.kill(pid, signal.SIGSTOP)
    try:
        error = _timed(executor, sshd, planned)
    finally:
        for pid in mine:
            os.kill(pid, signal.SIGCONT)
    assert error.failure in {"timeout", "unreachable"}
    assert executor.pooled_ssh_connections == 0  # the stalled transport is not kept
    assert executor.ssh_exec(planned, sshd.secret()).stdout == "hi\n"
