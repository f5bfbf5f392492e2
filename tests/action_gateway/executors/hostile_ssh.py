"""Hostile SSH servers on 127.0.0.1: a scripted paramiko server, and raw TCP tricksters.

The paramiko server accepts any public key, records every authentication attempt (so a test can
prove none was made), and can stall an ``exec`` request forever, as a compromised or broken
server might. The raw servers never speak SSH properly: one trickles a banner that never ends,
one sends a banner and then nothing.
"""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from paramiko.common import AUTH_SUCCESSFUL, OPEN_SUCCEEDED


@dataclass
class SshServerLog:
    auth_attempts: list[str] = field(default_factory=list)
    commands: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class HostileSsh:
    port: int
    host_key_line: str
    log: SshServerLog
    transports: list[paramiko.Transport]

    def rekey_with_a_new_host_key(self) -> None:
        """Re-run the key exchange on every open session, signing with another host key."""
        for transport in self.transports:
            transport.add_server_key(_host_key("ed25519"))
            transport.renegotiate_keys()


def _host_key(kind: str) -> paramiko.PKey:
    private: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
    if kind == "ed25519":
        private = ed25519.Ed25519PrivateKey.generate()
        loader: type[paramiko.PKey] = paramiko.Ed25519Key
    else:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        loader = paramiko.RSAKey
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    return loader.from_private_key(io.StringIO(pem.decode("ascii")))


class _Server(paramiko.ServerInterface):
    def __init__(self, log: SshServerLog, stall_exec: threading.Event | None) -> None:
        self.log = log
        self.stall_exec = stall_exec

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        self.log.auth_attempts.append(username)
        return AUTH_SUCCESSFUL

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return OPEN_SUCCEEDED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.log.commands.append(command)
        if self.stall_exec is not None:
            self.stall_exec.wait(30)  # never answers while the test runs
            return True

        def finish() -> None:  # runs nothing: exit 0 once the request was answered
            with suppress(paramiko.SSHException, EOFError, OSError):
                channel.send_exit_status(0)
                channel.close()

        threading.Timer(0.05, finish).start()
        return True


@contextmanager
def running_paramiko_server(
    kind: str = "ed25519", *, stall_exec: bool = False
) -> Iterator[HostileSsh]:
    key = _host_key(kind)
    log = SshServerLog()
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    transports: list[paramiko.Transport] = []

    def accept_loop() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                transport = paramiko.Transport(conn)
                transport.add_server_key(key)
                transports.append(transport)
                with suppress(paramiko.SSHException, EOFError, OSError):
                    transport.start_server(server=_Server(log, stop if stall_exec else None))

    threading.Thread(target=accept_loop, daemon=True).start()
    try:
        yield HostileSsh(
            port=int(listener.getsockname()[1]),
            host_key_line=f"{key.get_name()} {key.get_base64()}",
            log=log,
            transports=transports,
        )
    finally:
        stop.set()
        listener.close()
        for transport in transports:
            transport.close()


@contextmanager
def running_raw_server(
    behaviour: Callable[[socket.socket, threading.Event], None],
) -> Iterator[int]:
    """A TCP server that runs ``behaviour`` on each connection until the test ends."""
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with suppress(OSError):
            behaviour(conn, stop)
        conn.close()

    def accept_loop() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()


def trickle_banner(conn: socket.socket, stop: threading.Event) -> None:
    """Bytes forever, never a line end: a banner that never completes."""
    while not stop.wait(0.05):
        conn.sendall(b"S")


def banner_then_silence(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
    stop.wait(30)
