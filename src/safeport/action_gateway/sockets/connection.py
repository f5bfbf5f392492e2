"""One identified connection on agent.sock or control.sock, and what a handler does with it.

Handlers receive decoded frames, parse them with the shared request models
(:func:`parse_request`), and answer with the shared reply models through :meth:`Connection.send`;
no reply is ever a hand-built dict.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.sockets.peer_socket import PeerSocket, Sender
from safeport.errors import ErrorCode, FrameTooLarge, WireError
from safeport.shared.exception_summary import summarize
from safeport.shared.schemas.replies import ReplyError, ReplyOk, error_reply, wire_form
from safeport.shared.schemas.wire import PendingNotice, Welcome
from safeport.shared.wire import (
    HEADER,
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    FrameCutShort,
    FrameStalled,
    NotUtf8,
    PeerClosed,
    encode_frame,
    frame_length,
)

log = logging.getLogger("safeport.gateway")

Outgoing = ReplyOk[Any] | ReplyError | Welcome | PendingNotice
Request = TypeVar("Request")


@dataclass(frozen=True)
class ServerLimits:
    max_request_bytes: int = MAX_REQUEST_BYTES
    frame_timeout_s: float = 5.0
    idle_timeout_s: float = 600.0
    write_timeout_s: float = 10.0
    max_inflight_per_connection: int = 8
    # control.sock: how long a connection may stay silent before its first message.
    first_message_timeout_s: float = 3.0
    control_max_connections: int = 256
    # A full control.sock closes an idle connection to make room, never one younger than this:
    # a flood that reconnects whatever is closed would otherwise close the newest in turn.
    evict_after_idle_s: float = 0.5


@dataclass(eq=False)
class Connection:
    """One accepted connection: its peer, its socket, and what it has sent that was junk."""

    peer: PeerIdentity
    channel: PeerSocket
    limits: ServerLimits
    junk: Counter[str] = field(default_factory=Counter)
    write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    closed: bool = False

    @property
    def subscribed(self) -> bool:
        return self.channel.keep_open

    def subscribe(self) -> None:
        """Keep this connection open while it waits for pushed events (approvals watch)."""
        self.channel.keep_open = True

    def close(self) -> None:
        self.closed = True
        self.channel.close()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While an operation only waits its turn, a full control.sock may close it."""
        self.channel.waiting = True
        try:
            yield
        finally:
            self.channel.waiting = False

    async def next_frame(self, first_message_timeout_s: float | None) -> tuple[bytes, set[Sender]]:
        """One frame and its writers: wait for its first byte (up to the idle timeout, longer
        while requests of this connection are in progress or it is subscribed; before its
        first message, ``first_message_timeout_s`` when given), then up to the frame timeout for
        the rest.
        """
        limits = self.limits
        channel = self.channel
        while True:
            idle = limits.idle_timeout_s
            if not channel.spoke and first_message_timeout_s is not None:
                idle = first_message_timeout_s
            try:
                async with asyncio.timeout(idle):
                    first, senders = await channel.read_some(HEADER.size)
                break
            except TimeoutError:
                if self.tasks or channel.keep_open:
                    continue
                raise
            except ConnectionError:
                raise PeerClosed("the connection was closed") from None
        try:
            async with asyncio.timeout(limits.frame_timeout_s):
                header = first
                if len(header) < HEADER.size:
                    rest, more = await channel.read_exactly(HEADER.size - len(header))
                    header += rest
                    senders |= more
                length = frame_length(header, limits.max_request_bytes)
                if length:
                    payload, more = await channel.read_exactly(length)
                    senders |= more
                else:
                    payload = b""
                return payload, senders
        except TimeoutError:
            raise FrameStalled("partial frame timed out") from None
        except (asyncio.IncompleteReadError, PeerClosed, ConnectionError):
            raise FrameCutShort("connection closed mid-frame") from None

    async def send(self, message: Outgoing, *, limit: int = MAX_REPLY_BYTES) -> None:
        if self.closed:
            return
        try:
            frame = encode_frame(wire_form(message), limit=limit)
        except FrameTooLarge:
            frame = encode_frame(
                wire_form(error_reply(message.id, "internal", "the result is over the reply cap"))
            )
        except (ValueError, TypeError) as exc:  # pydantic's serialization errors are ValueErrors
            log.error("a reply could not be encoded: %s", summarize(exc))
            frame = encode_frame(
                wire_form(error_reply(message.id, "internal", "the reply could not be encoded"))
            )
        async with self.write_lock:
            try:
                # The write timeout is armed only when the socket cannot take the frame at once.
                sent = self.channel.send_now(frame)
                if sent < len(frame):
                    async with asyncio.timeout(self.limits.write_timeout_s):
                        await self.channel.send_all(frame[sent:])
            except (ConnectionError, TimeoutError, OSError):
                self.close()

    async def send_error(self, request_id: object, code: ErrorCode, reason: str) -> None:
        await self.send(error_reply(request_id, code, reason))

    def spawn_send(self, message: Outgoing) -> None:
        """Send from a callback on the loop (a pushed event): the task is the connection's, so
        closing the connection cancels it."""
        task = asyncio.get_running_loop().create_task(self.send(message))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


class Handler:
    """What a server does with each message of one connection."""

    async def opened(self, conn: Connection) -> None:  # pragma: no cover - default no-op
        return None

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        raise NotImplementedError

    async def closed(self, conn: Connection) -> None:  # pragma: no cover - default no-op
        return None


def parse_request(
    adapter: TypeAdapter[Request], data: Mapping[str, Any]
) -> tuple[Request, None] | tuple[None, str]:
    """Validate ``data``; (request, None), or (None, a short reason that never quotes the input:
    it could hold a passphrase)."""
    try:
        return adapter.validate_python(data), None
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][-2:]) or "message"
        where = re.sub(r"[^A-Za-z0-9_.\[\]-]", "?", where)[:80]
        return None, f"the message does not match the schema at `{where}` ({first['type']})"


def frame_junk(exc: WireError) -> str:
    """The junk count of a frame that could not be read whole: by the error's type, never its
    text (a reason reworded must not move a frame from one count to another)."""
    return "partial_frame" if isinstance(exc, FrameStalled) else "truncated"


def payload_junk(exc: WireError) -> str:
    """The junk count of a whole frame that does not decode to a JSON object: by type too."""
    return "not_utf8" if isinstance(exc, NotUtf8) else "not_json"
