"""Stopping a command that outlived its deadline, whatever the remote side does.

The KILL signal first (RFC 4254 "signal" request; OpenSSH sends it to the command's process
group); a command still talking after :data:`KILL_GRACE_S` is stopped by closing its channel
and the transport under it (ssh/pool.py drops that transport).
"""

from __future__ import annotations

import select
import time
from contextlib import suppress

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST
from paramiko.message import Message

# After the KILL signal at the deadline: how long the command may take to end before the
# channel and its transport are closed on it (the answer stays within timeout_s + 2 s).
KILL_GRACE_S = 0.5
_READ_CHUNK = 32768


def stop_remote_command(channel: paramiko.Channel) -> None:
    """Ask the server to kill the command (RFC 4254 "signal" request), best effort.

    Without a pty, closing the channel does not end the remote process: `sleep 60; reboot`
    would carry on after our timeout. OpenSSH honours the signal request; paramiko has no public
    call for it, so the message is built here.
    """
    message = Message()
    message.add_byte(cMSG_CHANNEL_REQUEST)
    message.add_int(channel.remote_chanid)
    message.add_string("signal")
    message.add_boolean(False)
    message.add_string("KILL")
    with suppress(paramiko.SSHException, EOFError, OSError):
        channel.transport._send_user_message(message)  # type: ignore[union-attr]


def ended_within(channel: paramiko.Channel, seconds: float) -> bool:
    """Whether the command's output ended (EOF, an exit status or the channel closed) within
    ``seconds``; what it still sends meanwhile is read and dropped, so a full window never
    holds the end back. A command the signal did not reach (another process group, a server
    that refuses signals) is then stopped by closing the channel (and its transport): a
    process that writes dies on its broken pipe, one that never writes is out of reach."""
    end = time.monotonic() + seconds
    while not (channel.eof_received or channel.closed or channel.exit_status_ready()):
        remaining = end - time.monotonic()
        if remaining <= 0:
            return False
        select.select([channel], [], [], min(remaining, 0.1))
        while channel.recv_ready():
            channel.recv(_READ_CHUNK)
        while channel.recv_stderr_ready():
            channel.recv_stderr(_READ_CHUNK)
    return True
