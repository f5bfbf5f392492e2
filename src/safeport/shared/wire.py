"""Framing on the local sockets: a 4-byte big-endian length, then one UTF-8 JSON object.

The length is checked before a single payload byte is read, so a peer that declares 4 GiB costs
us four bytes. Decoding errors are :class:`~safeport.errors.WireError`; the caller answers them
with an ``invalid`` reply and keeps the connection (a too-large frame closes it).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Mapping
from typing import Any

from safeport.errors import FrameTooLarge, WireError
from safeport.shared.outside_json import MAX_DEPTH, JsonRefused, loads_outside

MAX_REQUEST_BYTES = 64 * 1024
# A reply is bounded by what the gateway will send (a filtered action result), not by the peer.
MAX_REPLY_BYTES = 32 * 1024 * 1024
HEADER = struct.Struct(">I")
# A reply may carry a document an action fetched (its JSON body, as it came); the gateway wrote
# it, so its depth is bounded only well below the interpreter's recursion limit.
REPLY_DEPTH = 256


class PeerClosed(WireError):
    """The peer closed the connection cleanly between frames."""


# What went wrong is the type, never the text: the server counts each kind of junk apart, and a
# reason reworded for a person must not move a frame from one count to another.


class FrameStalled(WireError):
    """A frame began but its rest did not arrive within the frame timeout."""


class FrameCutShort(WireError):
    """The peer closed the connection in the middle of a frame."""


class NotUtf8(WireError):
    """A frame's payload is not UTF-8."""


class NotJson(WireError):
    """A frame's payload is not JSON, or JSON that is not an object."""


def encode_frame(message: Mapping[str, Any], *, limit: int | None = None) -> bytes:
    payload = json.dumps(
        message, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
    if limit is not None and len(payload) > limit:
        raise FrameTooLarge(f"message of {len(payload)} bytes is over the {limit}-byte limit")
    return HEADER.pack(len(payload)) + payload


def frame_length(header: bytes, limit: int) -> int:
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise FrameTooLarge(f"frame declares {length} bytes, over the {limit}-byte limit")
    return int(length)


def decode_payload(payload: bytes, *, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """UTF-8 → JSON → an object; anything else is a WireError with a short, fixed reason.

    The JSON is read by the strict outside-input decoder (``outside_json``): too deep, a
    repeated key, NaN, a number out of bounds or a lone surrogate is "not valid JSON"."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise NotUtf8("frame is not valid UTF-8") from None
    try:
        value = loads_outside(text, max_bytes=MAX_REPLY_BYTES, max_depth=max_depth)
    except JsonRefused:
        raise NotJson("frame is not valid JSON") from None
    if not isinstance(value, dict):
        raise NotJson("frame is not a JSON object")
    return value


async def read_frame(
    reader: asyncio.StreamReader, *, limit: int = MAX_REQUEST_BYTES, timeout: float = 5.0
) -> bytes:
    """Read one frame's payload. A partial frame that stalls past ``timeout`` is an error.

    Waiting for the *first* byte of a frame has no timeout of its own here; the server decides
    how long an idle connection may live.
    """
    try:
        first = await reader.readexactly(1)
    except asyncio.IncompleteReadError:
        raise PeerClosed("peer closed the connection") from None
    try:
        async with asyncio.timeout(timeout):
            header = first + await reader.readexactly(HEADER.size - 1)
            length = frame_length(header, limit)
            return await reader.readexactly(length)
    except TimeoutError:
        raise FrameStalled("partial frame timed out") from None
    except asyncio.IncompleteReadError:
        raise FrameCutShort("connection closed mid-frame") from None


def send_message(sock: socket.socket, message: Mapping[str, Any]) -> None:
    sock.sendall(encode_frame(message))


def recv_message(sock: socket.socket, *, limit: int = 16 * 1024 * 1024) -> dict[str, Any]:
    """Blocking read of one reply (used by the `sp` client side)."""
    header = _recv_exactly(sock, HEADER.size)
    return decode_payload(_recv_exactly(sock, frame_length(header, limit)), max_depth=REPLY_DEPTH)


def _recv_exactly(sock: socket.socket, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        chunk = sock.recv(count - len(chunks))
        if not chunk:
            raise PeerClosed("peer closed the connection")
        chunks += chunk
    return bytes(chunks)
