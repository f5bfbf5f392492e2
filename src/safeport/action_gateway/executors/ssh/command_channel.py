"""Run one fixed command in a new session channel of an open transport: the exec request (no
pty, no environment), both output streams drained under their caps, the exit status, and the
whole call bounded by the action's deadline.
"""

from __future__ import annotations

import select
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field

import paramiko

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.deadline import within
from safeport.action_gateway.executors.ssh.stop import (
    KILL_GRACE_S,
    ended_within,
    stop_remote_command,
)
from safeport.action_gateway.executors.ssh.transport import StaleTransport, translate_ssh_errors
from safeport.shared.schemas.wire import SshExecResult

_READ_CHUNK = 32768
# After a stream passes its cap we keep draining (and discarding) for a while so the exit status
# can still arrive; a command that keeps talking past this budget is stopped instead.
_DISCARD_FACTOR = 16


@dataclass
class _CappedStream:
    cap: int
    kept: bytearray = field(default_factory=bytearray)
    discarded: int = 0

    def feed(self, data: bytes) -> None:
        room = self.cap - len(self.kept)
        self.kept += data[:room]
        self.discarded += max(0, len(data) - room)

    @property
    def truncated(self) -> bool:
        return self.discarded > 0


def run_command(
    host_id: str, transport: paramiko.Transport, command: str, timeout_s: float, cap: int
) -> SshExecResult:
    """Run ``command`` in a new session channel; output capped, the whole call bounded in time."""
    started = time.monotonic()
    deadline = started + within(timeout_s)  # what connecting left of the action's deadline
    if deadline <= started:
        raise ActionError("timeout", f"ssh host {host_id!r} was not ready in time")
    try:
        channel = transport.open_session(timeout=min(deadline - started, 10))
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise StaleTransport from exc
    with translate_ssh_errors(host_id):
        try:
            _exec_before(host_id, channel, command, deadline)
            stdout, stderr = _CappedStream(cap), _CappedStream(cap)
            exit_status = _pump(host_id, channel, stdout, stderr, deadline, cap)
        finally:
            channel.close()
    out, out_replaced = _decode(stdout.kept)
    err, err_replaced = _decode(stderr.kept)
    return SshExecResult(
        exit_status=exit_status,
        stdout=out,
        stderr=err,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        output_replaced=out_replaced or err_replaced,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _exec_before(host_id: str, channel: paramiko.Channel, command: str, deadline: float) -> None:
    """Send the exec request (no pty, no environment); give up on its answer at the deadline.

    paramiko waits for the server's reply to an exec request with no timeout at all, so a
    server that never answers would hold the worker forever; closing the channel from a timer
    is the one public way to end that wait.
    """
    cut = threading.Event()

    def cut_off() -> None:
        cut.set()
        # The channel counts as closed (and the wait ends) before the close message is sent;
        # a transport too stuck to send it is not this thread's to report.
        with suppress(paramiko.SSHException, EOFError, OSError):
            channel.close()

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), cut_off)
    timer.daemon = True
    timer.start()
    try:
        channel.exec_command(command)  # no get_pty(), no set_environment_variable()
    except (paramiko.SSHException, EOFError) as exc:
        if cut.is_set():
            raise ActionError(
                "timeout", f"ssh host {host_id!r} did not accept the command in time"
            ) from exc
        raise
    finally:
        timer.cancel()


def _pump(
    host_id: str,
    channel: paramiko.Channel,
    stdout: _CappedStream,
    stderr: _CappedStream,
    deadline: float,
    cap: int,
) -> int | None:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stop_remote_command(channel)
            raise ActionError(
                "timeout",
                f"the command on {host_id!r} did not finish in time; it was stopped",
                stopped_by="cancel" if ended_within(channel, KILL_GRACE_S) else "close",
            )
        # The channel's fileno is a pipe paramiko sets when stdout or stderr has data or the
        # channel reached EOF, so one select waits on both streams without stalling either.
        select.select([channel], [], [], min(remaining, 1.0))
        while channel.recv_ready():
            stdout.feed(channel.recv(_READ_CHUNK))
        while channel.recv_stderr_ready():
            stderr.feed(channel.recv_stderr(_READ_CHUNK))
        if stdout.discarded + stderr.discarded > _DISCARD_FACTOR * cap:
            stop_remote_command(channel)
            return None  # still talking far past the cap: stopped, so no exit status
        drained = not channel.recv_ready() and not channel.recv_stderr_ready()
        if channel.eof_received and drained:
            break
        if channel.closed and drained:
            raise ActionError(
                "unreachable",
                f"the ssh connection to {host_id!r} dropped while the command ran; "
                "it may or may not have completed",
            )
    # The exit status travels after the data; wait for it within what is left of the deadline.
    channel.status_event.wait(max(0.0, deadline - time.monotonic()))
    if not channel.exit_status_ready():
        return None
    status = channel.recv_exit_status()
    return None if status < 0 else status


def _decode(data: bytes | bytearray) -> tuple[str, bool]:
    try:
        return bytes(data).decode("utf-8"), False
    except UnicodeDecodeError:
        return bytes(data).decode("utf-8", errors="replace"), True
