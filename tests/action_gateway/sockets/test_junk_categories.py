"""Junk on a socket is counted by the type of the error its frame raised, never by the error's
words: each raise site raises its own WireError subclass, and a message reworded (or one that
happens to say "timed out" or "UTF-8") moves no frame from one count to another."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.sockets.connection import (
    Connection,
    ServerLimits,
    frame_junk,
    payload_junk,
)
from safeport.action_gateway.sockets.peer_socket import PeerSocket
from safeport.errors import WireError
from safeport.shared.wire import FrameCutShort, FrameStalled, NotJson, NotUtf8, decode_payload


def _next_frame_error(sent: bytes, *, close: bool) -> WireError:
    """What the gateway's own frame reader raises for ``sent`` on a real socket."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    peer = LinuxProbe().resolve(ours)
    theirs.sendall(sent)
    if close:
        theirs.close()

    async def read() -> None:
        conn = Connection(
            peer=peer, channel=PeerSocket(ours), limits=ServerLimits(frame_timeout_s=0.2)
        )
        try:
            await conn.next_frame(None)
        finally:
            conn.close()

    try:
        with pytest.raises(WireError) as caught:
            asyncio.run(read())
    finally:
        theirs.close()
    return caught.value


def test_a_frame_that_stalls_midway_is_a_partial_frame() -> None:
    error = _next_frame_error(struct.pack(">I", 10) + b"abc", close=False)
    assert type(error) is FrameStalled
    assert frame_junk(error) == "partial_frame"


def test_a_frame_whose_connection_closes_midway_is_truncated() -> None:
    error = _next_frame_error(struct.pack(">I", 10) + b"abc", close=True)
    assert type(error) is FrameCutShort
    assert frame_junk(error) == "truncated"


@pytest.mark.parametrize(
    ("payload", "raised", "category"),
    [
        (b"\xff\xfe", NotUtf8, "not_utf8"),
        (b"{not json", NotJson, "not_json"),
        (b"[1,2]", NotJson, "not_json"),
    ],
)
def test_a_payload_that_does_not_decode_is_counted_by_its_error_type(
    payload: bytes, raised: type[WireError], category: str
) -> None:
    with pytest.raises(WireError) as caught:
        decode_payload(payload)
    assert type(caught.value) is raised
    assert payload_junk(caught.value) == category


def test_the_words_of_a_wire_error_decide_nothing() -> None:
    # What the old text match would have counted as a timeout or bad UTF-8, and the reverse.
    assert frame_junk(WireError("the peer timed out on something else")) == "truncated"
    assert frame_junk(FrameCutShort("partial frame timed out")) == "truncated"
    assert frame_junk(FrameStalled("connection closed mid-frame")) == "partial_frame"
    assert payload_junk(WireError("frame is not valid UTF-8")) == "not_json"
    assert payload_junk(NotJson("UTF-8 all right, but not JSON")) == "not_json"
    assert payload_junk(NotUtf8("frame is not valid JSON")) == "not_utf8"
