"""The stdio transport: JSON-RPC lines over asyncio pipes, with no thread hop per line.

While it serves, the protocol lives on private duplicates of stdin and stdout; fd 0 reads
``/dev/null`` and fd 1 writes to stderr. Whatever else in the process writes to stdout (a
library's ``print()``, a C extension writing to fd 1, a child process that inherits it) lands on
stderr, never between two frames, and nothing else can read the client's input. When serving
ends, stdin is restored; stdout is not: whatever a lingering thread writes while the process
exits goes to stderr too, and the client's end of the pipe closes with the last frame.

Every line goes first to :class:`DirectCalls` (the bounded read-only tools, answered on the
spot); everything else goes to the MCP SDK's server, exactly as its own stdio transport would
hand it over.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage

from safeport.context_server.sdk_seam import lowlevel_server
from safeport.context_server.transport.fast_path import DirectCalls
from safeport.errors import EnvironmentProblem

log = logging.getLogger(__name__)

# A request line longer than this is dropped (it arrives as an unparsable remainder).
MAX_LINE_BYTES = 64 * 1024 * 1024
CLOSE_WAIT_S = 5.0
# Requests the SDK holds at once (each is a task until its answer leaves). A client that
# pipelines more, or stops reading its answers, gets "busy" errors instead of a server whose
# memory grows with every line.
MAX_IN_FLIGHT = 256
BUSY = -32000  # JSON-RPC's range for server errors
BUSY_MESSAGE = f"server busy: {MAX_IN_FLIGHT} requests in flight; read their answers first"


async def serve_stdio(
    server: MCPServer[Any], direct: DirectCalls | None = None, *, tools_change: bool = False
) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin.

    ``tools_change``: the tool list may change during the session, and the client is told
    (the ``listChanged`` capability)."""
    with claimed_stdio() as (wire_in, wire_out):
        lines = await LineSource.open(wire_in)
        frames = await FrameSink.open(wire_out)
        try:
            await _serve(
                server, lines, frames, direct, NotificationOptions(tools_changed=tools_change)
            )
        finally:
            lines.close()
            await frames.aclose()


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """Move the protocol to private descriptors; fd 0 reads EOF and fd 1 goes to stderr (for
    good: nothing but frames may reach the client, not even at exit)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()  # anything buffered before serving goes where it was meant to
    try:
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        raise EnvironmentProblem("stdin is closed: an MCP client speaks on stdin") from None
    try:
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(wire_in)
        raise EnvironmentProblem("stdout is closed: an MCP client listens on stdout") from None
    flags = [fcntl.fcntl(fd, fcntl.F_GETFL) for fd in (wire_in, wire_out)]
    _point(0, os.devnull, os.O_RDONLY)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr either: stray output goes nowhere
        _point(1, os.devnull, os.O_WRONLY)
    try:
        yield wire_in, wire_out
    finally:
        for fd, saved in zip((wire_in, wire_out), flags, strict=True):
            # The pipes were made non-blocking, and a terminal is shared with the shell.
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, saved)
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
        os.close(wire_in)
        os.close(wire_out)


def _point(std: int, path: str, flags: int) -> None:
    fd = os.open(path, flags | os.O_CLOEXEC)
    try:
        os.dup2(fd, std)
    finally:
        os.close(fd)


def _pollable(fd: int) -> bool:
    """epoll waits on pipes, sockets and terminals; a regular file is always 'ready'."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class LineSource:
    """Lines from the client: an asyncio pipe, or a reader thread for a regular file."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport | None):
        self._reader = reader
        self._transport = transport

    @classmethod
    async def open(cls, fd: int) -> LineSource:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
        if not _pollable(fd):
            _feed_from_thread(fd, reader, loop)
            return cls(reader, None)
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        return cls(reader, transport)

    async def readline(self) -> bytes | None:
        """The next line (with its newline), or None at end of input."""
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:
                log.warning("dropped a request line over %d bytes", MAX_LINE_BYTES)
                continue
            return line or None

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


def _feed_from_thread(
    fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop
) -> None:
    def pump() -> None:
        try:
            while chunk := os.read(fd, 1 << 16):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        except OSError as exc:
            log.warning("stdin read failed: %s", type(exc).__name__)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, daemon=True, name="stdin").start()


class FrameSink:
    """Frames to the client: an asyncio pipe, or blocking writes to a regular file."""

    def __init__(self, fd: int, writer: asyncio.StreamWriter | None) -> None:
        self._fd = fd
        self._writer = writer

    @classmethod
    async def open(cls, fd: int) -> FrameSink:
        if not _pollable(fd):
            return cls(fd, None)
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), pipe
        )
        return cls(fd, asyncio.StreamWriter(transport, protocol, None, loop))

    async def send(self, frame: bytes) -> None:
        """Write one whole frame; frames never interleave (one write call per frame)."""
        if self._writer is None:
            view = memoryview(frame)
            while view:
                view = view[os.write(self._fd, view) :]
            return
        if self._writer.transport.is_closing():
            return  # the client went away; its input ends next
        self._writer.write(frame)
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()

    async def aclose(self) -> None:
        """Close once the last frames have left (a client that stopped reading gets 5 s)."""
        if self._writer is None:
            return
        transport = self._writer.transport
        with anyio.move_on_after(CLOSE_WAIT_S):
            while transport.get_write_buffer_size() and not transport.is_closing():
                await asyncio.sleep(0.005)
        transport.close()


async def _serve(
    server: MCPServer[Any],
    lines: LineSource,
    frames: FrameSink,
    direct: DirectCalls | None,
    notifications: NotificationOptions,
) -> None:
    to_sdk, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    sdk_out, from_sdk = anyio.create_memory_object_stream[SessionMessage](0)
    lowlevel = lowlevel_server(server)
    in_flight = InFlight()

    async def run_sdk() -> None:
        async with sdk_out:
            options = lowlevel.create_initialization_options(notifications)
            await lowlevel.run(sdk_in, sdk_out, options)

    async with anyio.create_task_group() as tg:
        tg.start_soon(_send_sdk_frames, from_sdk, frames, direct, in_flight)
        tg.start_soon(run_sdk)
        async with to_sdk:
            while (line := await lines.readline()) is not None:
                await _dispatch(line, to_sdk, frames, direct, in_flight)
            # End of input: the SDK would drop the requests it still holds (closing its input
            # ends its run), so they get their answers first (5 s for what awaits the client).
            with anyio.move_on_after(CLOSE_WAIT_S):
                while in_flight.count:
                    await anyio.sleep(0.005)


async def _dispatch(
    line: bytes,
    to_sdk: MemoryObjectSendStream[SessionMessage | Exception],
    frames: FrameSink,
    direct: DirectCalls | None,
    in_flight: InFlight,
) -> None:
    text = line.decode("utf-8", "replace")  # as the SDK's own transport reads it
    if not text.strip():
        return
    if direct is not None:
        try:
            # The SDK's own JSON parser: a line it refuses (a lone surrogate, nesting past its
            # depth limit) is refused here too, never answered.
            parsed: object = pydantic_core.from_json(text)
        except ValueError:
            parsed = None
        if parsed is not None:
            answer = await direct.answer(parsed)
            if answer is not None:
                await frames.send(answer)
                return
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # the SDK answers a malformed message itself
        await to_sdk.send(exc)
        return
    if not in_flight.admit(message) and isinstance(message, types.JSONRPCRequest):
        # Answered here and at once; the wait for the client to read it is the back-pressure.
        busy = types.JSONRPCError(
            jsonrpc="2.0", id=message.id, error=types.ErrorData(code=BUSY, message=BUSY_MESSAGE)
        )
        await frames.send(busy.model_dump_json(by_alias=True).encode() + b"\n")
        return
    if direct is not None:
        # What the SDK is handed, as its parser read it, decides the era and the version.
        direct.observe_request(message)
    await to_sdk.send(SessionMessage(message))


async def _send_sdk_frames(
    from_sdk: MemoryObjectReceiveStream[SessionMessage],
    frames: FrameSink,
    direct: DirectCalls | None,
    in_flight: InFlight,
) -> None:
    async with from_sdk:
        async for session_message in from_sdk:
            message = session_message.message
            frame = message.model_dump_json(by_alias=True, exclude_unset=True)
            if direct is not None:
                direct.observe_answer(message)  # before the client can read it and go on
            await frames.send(frame.encode("utf-8") + b"\n")
            in_flight.answered(message)  # once written: a client that does not read holds it


class InFlight:
    """The client's requests the SDK holds: admitted up to :data:`MAX_IN_FLIGHT`, released by
    their answer or by the client cancelling them (a cancelled request gets no answer)."""

    def __init__(self) -> None:
        self._held: dict[int | str, int] = {}
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def admit(self, message: types.JSONRPCMessage) -> bool:
        """Whether to hand this message to the SDK (always, unless it is a request too many)."""
        if isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/cancelled" and message.params:
                self._release(message.params.get("requestId"))
            return True
        if not isinstance(message, types.JSONRPCRequest):
            return True  # the client's answers to the server's own requests
        if self._count >= MAX_IN_FLIGHT:
            return False
        self._held[message.id] = self._held.get(message.id, 0) + 1
        self._count += 1
        return True

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._release(message.id)

    def _release(self, request_id: object) -> None:
        if not isinstance(request_id, int | str) or request_id not in self._held:
            return
        self._count -= 1
        if self._held[request_id] == 1:
            del self._held[request_id]
        else:
            self._held[request_id] -= 1
