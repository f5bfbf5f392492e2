"""The agent profile's only way to act: proposals to the gateway over agent.sock.

The context server holds no credential and decides nothing: it forwards a proposal exactly as
the model chose it, waits for the gateway's reply, and relays the outcome. If the MCP call is
cancelled (the client gave up or timed out), a ``cancel`` frame tells the gateway to withdraw a
pending approval card, so nothing runs after the agent stopped waiting. While a proposal waits
for a human, the gateway says which card it waits on; the caller hears of it (``on_pending``).

Each call uses its own connection: the gateway re-derives the peer's identity on every
connection, and a dead gateway costs one failed connect rather than a stale shared stream.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from safeport.errors import Error, FrameTooLarge, WireError
from safeport.shared.schemas.replies import ReplyError, parse_reply
from safeport.shared.schemas.wire import PROTOCOL_VERSION, PendingBody, PendingNotice, Welcome
from safeport.shared.wire import (
    MAX_REQUEST_BYTES,
    REPLY_DEPTH,
    decode_payload,
    encode_frame,
    read_frame,
)

# Replies carry bounded action output (the policy caps it); allow generous headroom.
_REPLY_LIMIT = 32 * 1024 * 1024
_CONNECT_TIMEOUT_S = 5.0

OnPending = Callable[[PendingBody], Awaitable[None]]


class GatewayUnavailable(Error):
    """No gateway answers on agent.sock."""


class GatewayRefusal(Error):
    """The gateway answered with an error reply (denied, locked, timeout, …)."""

    exit_code = 1
    wire_code = "denied"

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


class GatewayLink:
    """Talks to one gateway socket; safe to share between concurrent tool calls."""

    def __init__(
        self,
        socket_path: Path,
        *,
        reply_timeout_s: float = 900.0,
        check_listener: Callable[[socket.socket], None] | None = None,
    ) -> None:
        """``check_listener`` vets the connected socket's peer before any byte is sent (the
        gateway account's uid in dedicated mode); its refusal is the tool call's answer."""
        self.socket_path = socket_path
        self.reply_timeout_s = reply_timeout_s
        self._check_listener = check_listener
        self._ids = itertools.count(1)
        self._prefix = f"ctx{os.getpid()}-"

    async def catalog(self) -> dict[str, Any]:
        return await self._call({"type": "catalog"})

    async def propose_ssh(
        self,
        host_id: str,
        command_id: str,
        args: Mapping[str, str | int],
        on_pending: OnPending | None = None,
        remote_token: str | None = None,
        wait_s: int | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "propose",
            "action": "ssh_exec",
            "host_id": host_id,
            "command_id": command_id,
            "args": dict(args),
        }
        if remote_token:
            message["remote_token"] = remote_token
        if wait_s is not None:
            message["wait_s"] = wait_s  # the card expires before this client gives up
        return await self._call(message, on_pending)

    async def propose_http(
        self,
        service_id: str,
        operation_id: str,
        args: Mapping[str, str | int],
        on_pending: OnPending | None = None,
        remote_token: str | None = None,
        wait_s: int | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "propose",
            "action": "http_request",
            "service_id": service_id,
            "operation_id": operation_id,
            "args": dict(args),
        }
        if remote_token:
            # A remote client's proposal: the gateway verifies the token, names the client on
            # the card and asks for this call alone.
            message["remote_token"] = remote_token
        if wait_s is not None:
            message["wait_s"] = wait_s  # the card expires before this client gives up
        return await self._call(message, on_pending)

    async def propose_sql(
        self,
        database: str,
        query: str,
        params: Mapping[str, str | int],
        on_pending: OnPending | None = None,
        remote_token: str | None = None,
        wait_s: int | None = None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "propose",
            "action": "run_readonly_query",
            "database": database,
            "query": query,
            "params": dict(params),
        }
        if remote_token:
            message["remote_token"] = remote_token  # as for SSH and HTTPS: named, per call
        if wait_s is not None:
            message["wait_s"] = wait_s  # the card expires before this client gives up
        return await self._call(message, on_pending)

    async def ask(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """One request of the given ``type`` (the OAuth messages), its ok result or the
        gateway's refusal raised."""
        return await self._call(dict(message))

    async def _call(
        self, message: dict[str, Any], on_pending: OnPending | None = None
    ) -> dict[str, Any]:
        request_id = f"{self._prefix}{next(self._ids)}"
        reader, writer = await self._connect()
        try:
            await self._welcomed(reader)
            hello = {"type": "hello", "versions": [PROTOCOL_VERSION], "features": ["pending"]}
            await self._exchange(reader, writer, hello)
            try:
                return await self._exchange(
                    reader, writer, message, request_id=request_id, on_pending=on_pending
                )
            except asyncio.CancelledError:
                # The MCP call was cancelled: withdraw the proposal before the connection goes.
                await asyncio.shield(self._send_cancel(writer, request_id))
                raise
        finally:
            writer.close()

    async def _welcomed(self, reader: asyncio.StreamReader) -> None:
        """The gateway speaks first, once it has identified this process; anything sent before
        would be refused as written by a program it had not seen."""
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT_S):
                first = decode_payload(await _read_reply(reader), max_depth=REPLY_DEPTH)
        except (TimeoutError, Error) as exc:
            raise GatewayUnavailable("the action gateway did not greet this connection") from exc
        try:
            Welcome.model_validate(first)
        except ValidationError:
            result_of(first)  # a refusal instead of the welcome (not served, or refused)
            raise GatewayRefusal("internal", "the gateway sent no welcome") from None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            async with asyncio.timeout(_CONNECT_TIMEOUT_S):
                reader, writer = await self._open()
        except (OSError, TimeoutError) as exc:
            raise GatewayUnavailable(
                "the action gateway is not running",
                hint="ask the user to start it with `sp gateway run`",
            ) from exc
        if self._check_listener is not None:
            try:
                self._check_listener(writer.get_extra_info("socket"))
            except Error as exc:
                writer.close()
                raise GatewayUnavailable(exc.message, hint=exc.hint) from None
        return reader, writer

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        # EAGAIN means the listen queue is full (a flood by another local process): retry
        # within the connect timeout instead of telling the model the gateway is gone.
        delay = 0.02
        while True:
            try:
                return await asyncio.open_unix_connection(str(self.socket_path))
            except BlockingIOError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.2)

    async def _exchange(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        message: dict[str, Any],
        *,
        request_id: str | None = None,
        on_pending: OnPending | None = None,
    ) -> dict[str, Any]:
        request_id = request_id or f"{self._prefix}{next(self._ids)}"
        try:
            # The gateway refuses a frame over its limit unread and closes the connection,
            # which would read here as a broken gateway: a request from outside (a relayed
            # registration) that large is refused before it is sent.
            frame = encode_frame(
                {"v": PROTOCOL_VERSION, "id": request_id, **message}, limit=MAX_REQUEST_BYTES
            )
        except FrameTooLarge:
            raise GatewayRefusal("invalid", "the request is over the 64 KiB limit") from None
        try:
            writer.write(frame)
            await writer.drain()
        except OSError as exc:  # the gateway closed this connection (stopped, or idle)
            raise GatewayUnavailable("the connection to the action gateway broke") from exc
        try:
            async with asyncio.timeout(self.reply_timeout_s):
                while True:
                    reply = decode_payload(await _read_reply(reader), max_depth=REPLY_DEPTH)
                    if reply.get("id") != request_id:
                        continue
                    if "pending" not in reply:
                        break
                    # The proposal waits for a human: say which card, then keep waiting.
                    notice = _pending_notice(reply)
                    if notice is not None and on_pending is not None:
                        await on_pending(notice)
        except TimeoutError as exc:
            raise GatewayRefusal("timeout", "the gateway did not answer in time") from exc
        except (Error, OSError) as exc:  # OSError: reset by the gateway while a reply was read
            raise GatewayUnavailable("the connection to the action gateway broke") from exc
        return result_of(reply)

    async def _send_cancel(self, writer: asyncio.StreamWriter, target: str) -> None:
        try:
            cancel_id = f"{self._prefix}{next(self._ids)}"
            frame = {"v": PROTOCOL_VERSION, "id": cancel_id, "type": "cancel", "target": target}
            writer.write(encode_frame(frame))
            async with asyncio.timeout(2):
                await writer.drain()
        except (OSError, TimeoutError):
            pass  # the gateway also withdraws everything pending when the connection closes


def result_of(message: dict[str, Any]) -> dict[str, Any]:
    """An ok reply's result; an error reply (or anything outside the protocol) raised as the
    gateway's refusal."""
    try:
        reply = parse_reply(message)
    except WireError as exc:
        raise GatewayRefusal("internal", exc.message) from None
    if isinstance(reply, ReplyError):
        raise GatewayRefusal(reply.error.code, reply.error.reason)
    return reply.result


def _pending_notice(reply: dict[str, Any]) -> PendingBody | None:
    try:
        return PendingNotice.model_validate(reply).pending
    except ValidationError:
        return None  # a malformed notice is ignored; the reply that follows still counts


async def _read_reply(reader: asyncio.StreamReader) -> bytes:
    # The first byte of a reply may take as long as a human takes to approve; the outer
    # timeout bounds that, and read_frame's own timeout only bounds a stalled partial frame.
    return await read_frame(reader, limit=_REPLY_LIMIT, timeout=30.0)


class HeldLink:
    """One connection kept open for small, frequent questions (``oauth_check`` on every HTTP
    request). The gateway identifies the peer once per connection, which costs far more than
    the question itself (about 17 ms against under 1 ms, measured); the identity it derived
    stays this process's for as long as the connection lives.

    Questions go one at a time. A connection that broke (the gateway restarted, or closed it
    when idle) is replaced once, then the failure is the caller's; a question cut short (a
    timeout, a cancelled request) drops the connection, since its stream may hold half a frame.
    """

    def __init__(self, link: GatewayLink) -> None:
        self._link = link
        self._open: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self._opened = 0  # connections opened so far: names the one open now

    def connection(self) -> int | None:
        """Which connection is open now (a number no other connection of this link has), or
        None if none is, or if the gateway closed it (it stopped, or died: the kernel closes a
        killed process's sockets, and the event loop sees the end as soon as it comes)."""
        if self._open is None or self._open[0].at_eof():
            return None
        return self._opened

    async def ask(self, message: Mapping[str, Any]) -> dict[str, Any]:
        async with self._lock:
            for attempt in (1, 2):
                fresh = self._open is None
                reader, writer = await self._connection()
                try:
                    return await self._link._exchange(reader, writer, dict(message))
                except GatewayRefusal as refusal:
                    if refusal.code == "timeout":
                        self.close()
                    raise
                except GatewayUnavailable:
                    self.close()
                    if fresh or attempt == 2:
                        raise
                except BaseException:
                    self.close()
                    raise
            raise GatewayUnavailable("the connection to the action gateway broke")

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._open is None:
            reader, writer = await self._link._connect()
            try:
                await self._link._welcomed(reader)
                hello = {"type": "hello", "versions": [PROTOCOL_VERSION], "features": ["pending"]}
                await self._link._exchange(reader, writer, hello)
            except BaseException:
                writer.close()
                raise
            self._open = (reader, writer)
            self._opened += 1
        return self._open
