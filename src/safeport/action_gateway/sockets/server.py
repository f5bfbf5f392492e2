"""The two Unix socket servers (agent.sock, control.sock): framing, limits, peers, junk.

Both run on one asyncio loop; anything that may block (identity digests, the ladder with its
fsyncs and approval waits, KDFs) runs in a worker thread, so one slow client never stalls another.
Each server has its own identity workers and its own connection budget, so agent traffic can
never use up what the human's `sp` needs on control.sock.

Limits: request frames of 64 KiB (a larger declared length is answered ``invalid`` and the
connection closed, its bytes never read), a partial frame times out after a few seconds, an idle
connection after a longer while (control.sock: a few seconds before its first message), and a
connection budget per server, of which each admitted uid may hold its share (:mod:`shares`, kept
by :mod:`admission`), so one human's agent cannot take the places another human needs. When
agent.sock is full, or the uid holds its share, more connections are answered ``unavailable``
(saying which limit) and closed; when control.sock is, the connection that has been idle longest
(never a subscribed approver, never one idle less than half a second) makes room, among the
uid's own when it holds its share, so a new `sp` command gets through a flood of idle
connections. Peers of another uid are refused before they take a place, even if the socket's
mode were loosened. Junk is counted per connection and journaled once, with the count, when it
closes.

Sender check (Linux): agent.sock receives with ``SO_PASSCRED``, so every chunk the kernel hands
over carries the pid of the process that wrote it (``SCM_CREDENTIALS``; the kernel never merges
the bytes of two writers into one chunk). A frame any byte of which was written by another
process than the one that connected and was identified, such as a forked child holding an
inherited socket or a process the socket was passed to, is refused ``denied`` and the connection
closed. macOS has no per-message credentials (LOCAL_PEERPID is connect-time only); there the
connect-time identity and its re-check before each request stand alone (docs/security/gateway.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from safeport.action_gateway.identity.model import IdentityProbe, PeerIdentity
from safeport.action_gateway.sockets.admission import ConnectionBudget, refusal_frame
from safeport.action_gateway.sockets.connection import (
    Connection,
    Handler,
    ServerLimits,
    frame_junk,
    payload_junk,
)
from safeport.action_gateway.sockets.peer_socket import (
    SENDER_CHECK,
    PeerSocket,
    Sender,
    bind_private_socket,
    peer_closed,
    queued_bytes,
)
from safeport.errors import Denied, Error, FrameTooLarge, WireError
from safeport.shared.exception_summary import summarize
from safeport.shared.peer_credentials import peer_uid
from safeport.shared.schemas.replies import readable_id
from safeport.shared.schemas.wire import PROTOCOL_VERSION, Welcome
from safeport.shared.wire import PeerClosed, decode_payload

log = logging.getLogger("safeport.gateway")

JunkSink = Callable[[Connection], Awaitable[None]]
SenderSink = Callable[[Connection, str | None, list[Sender]], Awaitable[None]]


class SocketServer:
    def __init__(
        self,
        name: str,
        path: Path,
        handler: Handler,
        *,
        probe: IdentityProbe,
        pool: ThreadPoolExecutor,
        limits: ServerLimits,
        max_connections: Callable[[], int],
        on_refused: Callable[[str], None],
        on_junk: JunkSink,
        on_foreign_sender: SenderSink | None = None,
        make_room: bool = False,
        first_message_timeout_s: float | None = None,
        speaks_first: bool = False,
        admitted_uids: frozenset[int] | None = None,
        socket_mode: int = 0o600,
    ) -> None:
        """``on_foreign_sender`` turns on the per-message sender check (where the platform has
        one); ``make_room`` closes the longest-idle connection instead of refusing a new one;
        ``speaks_first`` sends a welcome once the peer is identified and refuses a peer that
        sent anything before it (see :meth:`_welcome`)."""
        self.name = name
        self.path = path
        self._handler = handler
        self._probe = probe
        self._pool = pool
        self._limits = limits
        self._on_refused = on_refused
        self._on_junk = on_junk
        self._on_foreign_sender = on_foreign_sender if SENDER_CHECK else None
        self._first_message_timeout_s = first_message_timeout_s
        self._speaks_first = speaks_first
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._serving: set[asyncio.Task[None]] = set()
        self._connections: set[Connection] = set()
        self._admitted = admitted_uids if admitted_uids is not None else frozenset({os.geteuid()})
        self._socket_mode = socket_mode
        self._budget = ConnectionBudget(
            name,
            max_connections=max_connections,
            humans=len(self._admitted),
            on_refused=on_refused,
            make_room=make_room,
            evict_after_idle_s=limits.evict_after_idle_s,
        )
        self._channels = self._budget.channels  # each connection and its peer's uid

    async def start(self) -> None:
        self._listener = bind_private_socket(
            self.path, passcred=self._on_foreign_sender is not None, mode=self._socket_mode
        )
        self._accepting = asyncio.create_task(self._accept_loop(self._listener))

    async def close(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
        if self._listener is not None:
            asyncio.get_running_loop().remove_reader(self._listener.fileno())
            self._listener.close()
        for conn in list(self._connections):
            for task in conn.tasks:
                task.cancel()
        for channel in list(self._channels):
            channel.close()  # each read loop sees the close and ends on its own
        for _ in range(100):
            if not self._serving:
                break
            await asyncio.sleep(0.01)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @property
    def active(self) -> int:
        return len(self._channels)

    async def _accept_loop(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listener)
            except OSError as exc:  # out of descriptors, or a peer gone before accept
                log.warning("%s.sock: accept failed: %s", self.name, exc.strerror)
                await asyncio.sleep(0.05)
                continue
            task = asyncio.create_task(self._accept(sock))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)

    async def _accept(self, sock: socket.socket) -> None:
        channel = PeerSocket(sock)
        try:
            uid = peer_uid(channel.sock)
        except Error:
            channel.close()
            return
        if uid not in self._admitted:
            # Checked from the kernel's word before any /proc work, so users the gateway does not
            # serve cannot make it spend identity workers (dedicated mode's sockets are open to
            # every local user; same-user mode's are 0600 and this holds even if loosened), nor
            # take a place in the budget.
            self._on_refused(f"other_uid:{uid}")
            channel.send_nowait(refusal_frame("denied", "this gateway does not serve your user"))
            channel.close()
            return
        if not self._budget.admit(channel, uid):
            return
        self._channels[channel] = uid
        try:
            await self._serve(channel)
        finally:
            self._channels.pop(channel, None)
            channel.close()

    def _resolve_live(self, sock: socket.socket) -> PeerIdentity:
        """Identify the peer, unless it has already hung up: a flood of connect-write-close
        would otherwise keep the identity workers busy on connections no one will read, while
        the human's request waits behind them."""
        if peer_closed(sock):
            raise ConnectionAbortedError("the peer hung up before it was identified")
        return self._probe.resolve(sock)

    async def _serve(self, channel: PeerSocket) -> None:
        loop = asyncio.get_running_loop()
        if self._on_foreign_sender is not None:
            # Normally inherited from the listener; set again where a kernel does not.
            with contextlib.suppress(OSError):
                channel.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        try:
            peer = await loop.run_in_executor(self._pool, self._resolve_live, channel.sock)
        except Denied as exc:
            self._on_refused("identity_unavailable")
            channel.send_nowait(refusal_frame("denied", exc.message))
            return
        except ConnectionAbortedError:  # hung up before it was identified: counted, not read
            self._on_refused("hung_up_unidentified")
            return
        except OSError:  # closed (evicted) while it was being identified
            return
        conn = Connection(peer=peer, channel=channel, limits=self._limits)
        channel.task = asyncio.current_task()
        try:
            if channel.closed:
                return
            if peer.uid not in self._admitted:  # the probe's own reading disagrees: fail closed
                self._on_refused(f"other_uid:{peer.uid}")
                await conn.send_error(None, "denied", "this gateway does not serve your user")
                return
            self._connections.add(conn)
            await self._handler.opened(conn)
            if self._speaks_first and not await self._welcome(conn):
                return
            await self._read_loop(conn)
        finally:
            self._connections.discard(conn)
            conn.close()
            for task in list(conn.tasks):
                task.cancel()
            try:
                await self._handler.closed(conn)  # withdraws the connection's cards
            except Exception as exc:  # the connection is gone either way; say what failed
                log.error("%s.sock: closing a connection failed: %s", self.name, summarize(exc))
            try:
                if conn.junk:
                    await self._on_junk(conn)
            except Exception as exc:  # only the junk counts are lost; the peer is still released
                log.error("%s.sock: junk counts not journaled: %s", self.name, summarize(exc))
            self._probe.release(peer)

    async def _welcome(self, conn: Connection) -> bool:
        """Greet an identified peer; refuse one that wrote before it was identified.

        The peer's program is read from /proc after accept. A process could connect, write a
        proposal, then exec a genuine requester before that read: the card would show the
        genuine program for bytes the other one wrote, and its pid is the same, so the sender
        check cannot tell. A well-behaved client sends nothing until this welcome arrives, which
        is after the identity was taken; so any byte already queued now was written before, by
        whatever the process was then, and the connection is refused.
        """
        if queued_bytes(conn.channel.sock) > 0:
            conn.junk["before_welcome"] += 1
            await conn.send_error(
                None,
                "denied",
                "a request arrived before the gateway identified its sender; "
                "wait for the welcome before sending",
            )
            return False
        await conn.send(Welcome())
        return True

    async def _read_loop(self, conn: Connection) -> None:
        while not conn.closed:
            try:
                payload, senders = await conn.next_frame(self._first_message_timeout_s)
            except PeerClosed:
                return
            except TimeoutError:
                conn.junk["idle"] += 1
                return
            except FrameTooLarge:
                conn.junk["oversized"] += 1
                await conn.send_error(None, "invalid", "the request is over the 64 KiB limit")
                return
            except WireError as exc:
                conn.junk[frame_junk(exc)] += 1
                return
            if self._on_foreign_sender is not None and senders != {conn.peer.pid}:
                await self._refuse_foreign(conn, payload, senders)
                return
            conn.channel.spoke = True
            try:
                data = decode_payload(payload)
            except WireError as exc:
                conn.junk[payload_junk(exc)] += 1
                await conn.send_error(None, "invalid", exc.message)
                continue
            # An integer, not whatever equals one: true and 1.0 compare equal to 1 in Python.
            if type(data.get("v")) is not int or data["v"] != PROTOCOL_VERSION:
                conn.junk["version"] += 1
                await conn.send_error(
                    readable_id(data),
                    "invalid",
                    f"unsupported protocol version; use {PROTOCOL_VERSION}",
                )
                continue
            conn.channel.busy = True
            try:
                await self._handler.message(conn, data)
            finally:
                conn.channel.busy = False
                conn.channel.last_active = time.monotonic()

    async def _refuse_foreign(self, conn: Connection, payload: bytes, senders: set[Sender]) -> None:
        """A frame written by another process than the one that connected: refused, journaled,
        and the connection closed (whoever else holds it keeps nothing the requester had)."""
        assert self._on_foreign_sender is not None
        try:
            request_id = readable_id(decode_payload(payload))
        except WireError:
            request_id = None
        others = sorted((pid for pid in senders if pid != conn.peer.pid), key=lambda p: p or 0)
        log.warning(
            "%s.sock: a frame from pid %s on the connection of pid %d refused",
            self.name,
            ",".join(str(pid) for pid in others),
            conn.peer.pid,
        )
        try:
            await self._on_foreign_sender(conn, request_id, others)
        except Exception as exc:  # the refusal below stands even if it was not journaled
            log.error(
                "%s.sock: the foreign sender was not journaled: %s", self.name, summarize(exc)
            )
        await conn.send_error(
            request_id, "denied", "this message was not sent by the process that connected"
        )
