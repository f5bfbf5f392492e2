"""One connected stream socket on the event loop, read with the kernel's word on who wrote it.

Sender check (Linux): agent.sock receives with ``SO_PASSCRED``, so every chunk the kernel hands
over carries the pid of the process that wrote it (``SCM_CREDENTIALS``; the kernel never merges
the bytes of two writers into one chunk). macOS has no per-message credentials (LOCAL_PEERPID
is connect-time only); there the connect-time identity and its re-check before each request
stand alone (docs/security/gateway.md).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import os
import select
import socket
import struct
import sys
import termios
import time
from pathlib import Path
from typing import Any

from safeport.errors import Error
from safeport.shared.wire import PeerClosed

SENDER_CHECK = sys.platform.startswith("linux") and hasattr(socket, "SO_PASSCRED")
_UCRED = struct.Struct("3i")
# Room for one SCM_CREDENTIALS and a few descriptors (closed at once: nothing here takes fds).
_ANCILLARY_BYTES = socket.CMSG_SPACE(_UCRED.size) + socket.CMSG_SPACE(16 * 4)
Sender = int | None  # the kernel-attested pid of a chunk's writer; None when there is none


class PeerSocket:
    """A connected stream socket on the event loop, read with ``recvmsg`` so that each chunk
    comes with the kernel's word on who wrote it (asyncio's streams drop ancillary data).

    Reads never ask for more than the caller needs, so nothing past the current frame is read
    and no chunk mixes two frames' senders.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._fd = sock.fileno()
        self._loop = asyncio.get_running_loop()
        self._waiters: set[asyncio.Future[None]] = set()
        self.closed = False
        # What the server's budget looks at.
        self.opened_at = self.last_active = time.monotonic()
        self.spoke = False  # has sent at least one whole frame
        self.busy = False  # an operation of this connection is in progress
        self.waiting = False  # ... but only waiting its turn (a passphrase delay): evictable
        self.keep_open = False  # subscribed (approvals watch): never idle, never evicted
        self.task: asyncio.Task[Any] | None = None  # what serves it, once it is identified

    def evictable(self, now: float, grace: float) -> bool:
        return (
            not self.keep_open
            and (not self.busy or self.waiting)
            and now - self.last_active >= grace
        )

    async def read_some(self, limit: int) -> tuple[bytes, set[Sender]]:
        """One chunk of at least one byte and at most ``limit`` (a frame's header usually comes
        whole: one read for it, not two), and its writer; :class:`PeerClosed` on a clean end."""
        chunk, sender = await self._receive(limit)
        if not chunk:
            raise PeerClosed("peer closed the connection")
        self.last_active = time.monotonic()
        return chunk, {sender}

    async def read_exactly(self, count: int) -> tuple[bytes, set[Sender]]:
        """``count`` bytes and the writers of the chunks they came in; :class:`PeerClosed` on a
        clean end before the first byte, ``IncompleteReadError`` after it."""
        data = bytearray()
        senders: set[Sender] = set()
        while len(data) < count:
            chunk, sender = await self._receive(count - len(data))
            if not chunk:
                if not data:
                    raise PeerClosed("peer closed the connection")
                raise asyncio.IncompleteReadError(bytes(data), count)
            senders.add(sender)
            data += chunk
        self.last_active = time.monotonic()
        return bytes(data), senders

    async def _receive(self, limit: int) -> tuple[bytes, Sender]:
        """One ``recvmsg`` of at most ``limit`` bytes once the socket is readable, and the
        chunk's writer; an empty chunk where the peer closed or the socket failed."""
        while True:
            try:
                chunk, ancillary, _flags, _ = self.sock.recvmsg(limit, _ANCILLARY_BYTES)
            except (BlockingIOError, InterruptedError):
                await self._wait(writable=False)
                continue
            except OSError:
                chunk, ancillary = b"", []
            return chunk, _sender(ancillary)

    def send_now(self, data: bytes) -> int:
        """What the socket takes of ``data`` without waiting (a reply usually fits whole)."""
        try:
            return self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            return 0

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except (BlockingIOError, InterruptedError):
                await self._wait(writable=True)
                continue
            view = view[sent:]

    def send_nowait(self, data: bytes) -> None:
        """Best effort, for the one refusal sent before closing."""
        with contextlib.suppress(OSError):
            self.sock.send(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(ConnectionResetError("closed"))
        self._waiters.clear()
        self.sock.close()

    async def _wait(self, *, writable: bool) -> None:
        if self.closed:
            raise ConnectionResetError("closed")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.add(waiter)
        if writable:
            self._loop.add_writer(self._fd, _wake, waiter)
        else:
            self._loop.add_reader(self._fd, _wake, waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)
            if not self.closed:
                if writable:
                    self._loop.remove_writer(self._fd)
                else:
                    self._loop.remove_reader(self._fd)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _sender(ancillary: list[tuple[int, int, bytes]]) -> Sender:
    """The pid in a chunk's SCM_CREDENTIALS (0 when the writer is outside our pid namespace).
    Descriptors someone tried to pass are closed unread."""
    pid: Sender = None
    for level, kind, data in ancillary:
        if level != socket.SOL_SOCKET:
            continue
        if SENDER_CHECK and kind == socket.SCM_CREDENTIALS and len(data) >= _UCRED.size:
            pid = _UCRED.unpack_from(data)[0]
        elif kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
    return pid


def queued_bytes(sock: socket.socket) -> int:
    """Bytes the peer wrote that the gateway has not read yet (FIONREAD)."""
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0  # a closed socket: the read loop ends it
    return int.from_bytes(raw, sys.byteorder, signed=True)


def peer_closed(sock: socket.socket) -> bool:
    """Whether the peer has shut its end (poll reports a hang-up; no bytes are consumed)."""
    poller = select.poll()
    try:
        poller.register(sock.fileno(), select.POLLRDHUP | select.POLLHUP)
        return any(mask & (select.POLLRDHUP | select.POLLHUP) for _, mask in poller.poll(0))
    except (OSError, ValueError):
        return True


def bind_private_socket(path: Path, *, passcred: bool = False, mode: int = 0o600) -> socket.socket:
    """Bind a Unix socket created 0600 (umask while binding: no window where it is open), then
    give it ``mode`` (0660 in dedicated mode: the account's group, then admission by uid).

    With ``passcred`` the accepted connections inherit ``SO_PASSCRED`` (Linux), so credentials
    are attached to every write, even one made before the connection was accepted.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    except OSError as exc:
        sock.close()
        raise Error(f"cannot listen on {path}: {exc.strerror}") from exc
    finally:
        os.umask(old)
    path.chmod(mode)
    if passcred:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.listen(128)
    sock.setblocking(False)
    return sock
