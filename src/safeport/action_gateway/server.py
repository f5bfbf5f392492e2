"""The two Unix socket servers (agent.sock, control.sock): framing, limits, peers, junk.

Both run on one asyncio loop; anything that may block (identity digests, the ladder with its
fsyncs and approval waits, KDFs) runs in a worker thread, so one slow client never stalls another.
Limits: request frames of 64 KiB (a larger declared length is answered ``invalid`` and the
connection closed, its bytes never read), a partial frame times out after a few seconds, an idle
connection after a longer while, and at most ``max_connections`` at once (more are answered
``unavailable`` and closed). Peers of another uid are refused even if the socket's mode were
loosened. Junk is counted per connection and journaled once, with the count, when it closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from collections import Counter
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from safeport.action_gateway.identity import IdentityProbe, PeerIdentity
from safeport.errors import Denied, Error, FrameTooLarge, WireError
from safeport.shared.schemas.wire import PROTOCOL_VERSION, ErrorCode
from safeport.shared.wire import (
    HEADER,
    MAX_REQUEST_BYTES,
    PeerClosed,
    decode_payload,
    encode_frame,
    frame_length,
)

log = logging.getLogger("safeport.gateway")

_ID_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
MAX_REPLY_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class ServerLimits:
    max_request_bytes: int = MAX_REQUEST_BYTES
    frame_timeout_s: float = 5.0
    idle_timeout_s: float = 600.0
    write_timeout_s: float = 10.0
    max_inflight_per_connection: int = 8


@dataclass(eq=False)
class Connection:
    """One accepted connection: its peer, its writer, and what it has sent that was junk."""

    peer: PeerIdentity
    writer: asyncio.StreamWriter
    limits: ServerLimits
    junk: Counter[str] = field(default_factory=Counter)
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    closed: bool = False

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            frame = encode_frame(message, limit=MAX_REPLY_BYTES)
        except (FrameTooLarge, ValueError, TypeError):
            frame = encode_frame(
                error_reply(message.get("id"), "internal", "the reply could not be encoded")
            )
        async with self.write_lock:
            try:
                self.writer.write(frame)
                async with asyncio.timeout(self.limits.write_timeout_s):
                    await self.writer.drain()
            except (ConnectionError, TimeoutError, OSError):
                self.closed = True
                self.writer.close()

    async def send_error(self, request_id: object, code: ErrorCode, reason: str) -> None:
        await self.send(error_reply(request_id, code, reason))


class Handler:
    """What a server does with each message of one connection."""

    async def opened(self, conn: Connection) -> None:  # pragma: no cover - default no-op
        return None

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        raise NotImplementedError

    async def closed(self, conn: Connection) -> None:  # pragma: no cover - default no-op
        return None


JunkSink = Callable[[Connection], Awaitable[None]]


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
    ) -> None:
        self.name = name
        self.path = path
        self._handler = handler
        self._probe = probe
        self._pool = pool
        self._limits = limits
        self._max_connections = max_connections
        self._on_refused = on_refused
        self._on_junk = on_junk
        self._server: asyncio.AbstractServer | None = None
        self._active = 0
        self._connections: set[Connection] = set()
        self._uid = os.geteuid()

    async def start(self) -> None:
        sock = bind_private_socket(self.path)
        self._server = await asyncio.start_unix_server(self._accept, sock=sock, limit=1 << 16)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            for task in conn.tasks:
                task.cancel()
            conn.closed = True
            conn.writer.close()  # the read loop sees EOF and ends on its own
        for _ in range(100):
            if not self._active:
                break
            await asyncio.sleep(0.01)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    @property
    def active(self) -> int:
        return self._active

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._active >= self._max_connections():
            self._on_refused("too_many_connections")
            with contextlib.suppress(Exception):
                writer.write(encode_frame(error_reply(None, "unavailable", "too many connections")))
                writer.close()
            return
        self._active += 1
        try:
            await self._serve(reader, writer)
        finally:
            self._active -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock: socket.socket = writer.get_extra_info("socket")
        loop = asyncio.get_running_loop()
        try:
            peer = await loop.run_in_executor(self._pool, self._probe.resolve, sock)
        except Denied as exc:
            self._on_refused("identity_unavailable")
            writer.write(encode_frame(error_reply(None, "denied", exc.message)))
            return
        conn = Connection(peer=peer, writer=writer, limits=self._limits)
        try:
            if peer.uid != self._uid:
                # The run folder (0700) and socket (0600) keep other users out; this holds even
                # if someone loosens those modes.
                self._on_refused("other_uid")
                await conn.send_error(None, "denied", "this gateway serves only its own user")
                return
            self._connections.add(conn)
            await self._handler.opened(conn)
            await self._read_loop(reader, conn)
        finally:
            self._connections.discard(conn)
            conn.closed = True
            for task in list(conn.tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._handler.closed(conn)
            if conn.junk:
                await self._on_junk(conn)
            self._probe.release(peer)

    async def _read_loop(self, reader: asyncio.StreamReader, conn: Connection) -> None:
        while not conn.closed:
            try:
                payload = await _next_frame(reader, conn)
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
                conn.junk["partial_frame" if "timed out" in exc.message else "truncated"] += 1
                return
            try:
                data = decode_payload(payload)
            except WireError as exc:
                category = "not_utf8" if "UTF-8" in exc.message else "not_json"
                conn.junk[category] += 1
                await conn.send_error(None, "invalid", exc.message)
                continue
            if data.get("v") != PROTOCOL_VERSION:
                conn.junk["version"] += 1
                await conn.send_error(
                    readable_id(data),
                    "invalid",
                    f"unsupported protocol version; use {PROTOCOL_VERSION}",
                )
                continue
            await self._handler.message(conn, data)


async def _next_frame(reader: asyncio.StreamReader, conn: Connection) -> bytes:
    """One frame: wait up to the idle timeout for its first byte (longer while requests of this
    connection are in progress), then up to the frame timeout for the rest."""
    limits = conn.limits
    while True:
        try:
            async with asyncio.timeout(limits.idle_timeout_s):
                first = await reader.readexactly(1)
            break
        except TimeoutError:
            if conn.tasks:
                continue
            raise
        except asyncio.IncompleteReadError:
            raise PeerClosed("peer closed the connection") from None
    try:
        async with asyncio.timeout(limits.frame_timeout_s):
            header = first + await reader.readexactly(HEADER.size - 1)
            length = frame_length(header, limits.max_request_bytes)
            return await reader.readexactly(length)
    except TimeoutError:
        raise WireError("partial frame timed out") from None
    except asyncio.IncompleteReadError:
        raise WireError("connection closed mid-frame") from None


def bind_private_socket(path: Path) -> socket.socket:
    """Bind a Unix socket created 0600 (umask while binding: no window where it is open)."""
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
    path.chmod(0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def readable_id(data: dict[str, Any]) -> str | None:
    """The request's id when it is a well-formed one, else None (never echo junk)."""
    value = data.get("id")
    return value if isinstance(value, str) and _ID_RE.match(value) else None


def error_reply(request_id: object, code: ErrorCode, reason: str) -> dict[str, Any]:
    rid = request_id if isinstance(request_id, str) and _ID_RE.match(request_id) else None
    return {
        "v": PROTOCOL_VERSION,
        "id": rid,
        "ok": False,
        "error": {"code": code, "reason": reason[:1024]},
    }


def ok_reply(request_id: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "id": request_id, "ok": True, "result": result}


def schema_error(adapter: TypeAdapter[Any], data: dict[str, Any]) -> tuple[Any, str | None]:
    """Validate ``data``; return (model, None) or (None, a short reason without the input)."""
    try:
        return adapter.validate_python(data), None
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][-2:]) or "message"
        where = re.sub(r"[^A-Za-z0-9_.\[\]-]", "?", where)[:80]
        return None, f"the message does not match the schema at `{where}` ({first['type']})"
