"""A FIDO2 authenticator reached over a unix socket, for python-fido2's client stack.

Some authenticators are not USB HID devices a process can open: a key forwarded into a VM or a
container, a platform authenticator behind a bridge. Like ssh-agent's ``SSH_AUTH_SOCK``, the
approver names such a socket (``SAFEPORT_SECURITY_KEY_SOCKET``); whatever answers there is only
ever trusted as far as the gateway's own checks go: an assertion counts only if an enrolled
key signed it, over this card's challenge, with the user-presence flag set.

Framing: each CTAPHID message is one byte of command, four bytes of big-endian length and the
payload. The authenticator may send KEEPALIVE messages (status byte ``UPNEEDED`` while it waits
for a touch) before its answer; a cancelled call sends CANCEL and reads the answer out.
"""

from __future__ import annotations

import os
import select
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from threading import Event

from fido2.ctap import STATUS, CtapDevice, CtapError
from fido2.hid import CAPABILITY, CTAPHID

SOCKET_VARIABLE = "SAFEPORT_SECURITY_KEY_SOCKET"
_HEADER = struct.Struct(">BI")
MAX_MESSAGE = 7609  # the largest CTAPHID message (one init and 128 continuation packets)
_POLL_S = 0.1


class SocketCtapDevice(CtapDevice):
    """One CTAP2 authenticator behind a unix socket (a connection per call)."""

    def __init__(self, path: Path, *, timeout_s: float = 60.0) -> None:
        self.path = path
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"SocketCtapDevice({str(self.path)!r})"

    @property
    def capabilities(self) -> int:
        return int(CAPABILITY.CBOR)

    def call(
        self,
        cmd: int,
        data: bytes = b"",
        event: Event | None = None,
        on_keepalive: Callable[[STATUS], None] | None = None,
    ) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(self._timeout_s)
            conn.connect(str(self.path))
            conn.sendall(_HEADER.pack(cmd, len(data)) + data)
            cancelled = False
            last_status: int | None = None
            while True:
                if event is not None and event.is_set() and not cancelled:
                    conn.sendall(_HEADER.pack(CTAPHID.CANCEL, 0))
                    cancelled = True
                ready, _, _ = select.select([conn], [], [], _POLL_S)
                if not ready:
                    continue
                kind, payload = _read_message(conn)
                if kind == CTAPHID.KEEPALIVE:
                    status = payload[0] if payload else 0
                    if on_keepalive is not None and status != last_status:
                        on_keepalive(STATUS(status))
                    last_status = status
                    continue
                if kind == CTAPHID.ERROR:
                    raise CtapError(payload[0] if payload else CtapError.ERR.OTHER)
                if kind != cmd:
                    raise CtapError(CtapError.ERR.INVALID_COMMAND)
                return payload

    @classmethod
    def list_devices(cls) -> Iterator[CtapDevice]:
        """The socket the approver's environment names, if it is one."""
        named = os.environ.get(SOCKET_VARIABLE)
        if named and Path(named).is_socket():
            yield cls(Path(named))


def _read_message(conn: socket.socket) -> tuple[int, bytes]:
    kind, length = _HEADER.unpack(_read_exactly(conn, _HEADER.size))
    if length > MAX_MESSAGE:
        raise CtapError(CtapError.ERR.INVALID_LENGTH)
    return kind, _read_exactly(conn, length)


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = conn.recv(size - len(chunks))
        if not chunk:
            raise CtapError(CtapError.ERR.OTHER)
        chunks += chunk
    return bytes(chunks)


def read_message(conn: socket.socket) -> tuple[int, bytes]:
    """One framed message (the authenticator's side reads requests with it too)."""
    return _read_message(conn)


def frame(kind: int, payload: bytes) -> bytes:
    return _HEADER.pack(kind, len(payload)) + payload
