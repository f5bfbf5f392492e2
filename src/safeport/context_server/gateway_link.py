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

from safeport.errors import Error, WireError
from safeport.shared.schemas.replies import ReplyError, parse_reply
from safeport.shared.schemas.wire import PROTOCOL_VERSION, PendingBody, PendingNotice, Welcome
from safeport.shared.wire import decode_payload, encode_frame, read_frame

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
    ) -> dict[str, Any]:
        message = {
            "type": "propose",
            "action": "ssh_exec",
            "host_id": host_id,
            "command_id": command_id,
            "args": dict(args),
        }
        return await self._call(message, on_pending)

    async def propose_http(
        self,
        service_id: str,
        operation_id: str,
        args: Mapping[str, str | int],
        on_pending: OnPending | None = None,
    ) -> dict[str, Any]:
        message = {
            "type": "propose",
            "action": "http_request",
            "service_id": service_id,
            "operation_id": operation_id,
            "args": dict(args),
        }
        return await self._call(message, on_pending)

    async def propose_sql(
        self,
        database: str,
        query: str,
        params: Mapping[str, str | int],
        on_pending: OnPending | None = None,
    ) -> dict[str, Any]:
        message = {
            "type": "propose",
            "action": "run_readonly_query",
            "database": database,
            "query": query,
            "params": dict(params),
        }
        return await self._call(message, on_pending)

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
                first = decode_payload(await _read_reply(reader))
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
        writer.write(encode_frame({"v": PROTOCOL_VERSION, "id": request_id, **message}))
        await writer.drain()
        try:
            async with asyncio.timeout(self.reply_timeout_s):
                while True:
                    reply = decode_payload(await _read_reply(reader))
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
        except Error as exc:
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
