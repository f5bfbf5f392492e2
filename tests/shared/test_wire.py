"""Framing: lengths are checked before payloads are read; junk is a WireError, never a crash."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
from pydantic import TypeAdapter, ValidationError

from safeport.errors import FrameTooLarge, WireError
from safeport.shared.schemas import AgentRequest, ProposeSsh
from safeport.shared.wire import (
    MAX_REQUEST_BYTES,
    PeerClosed,
    decode_payload,
    encode_frame,
    read_frame,
    recv_message,
    send_message,
)

AGENT = TypeAdapter(AgentRequest)


def _reader(data: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


def test_a_frame_round_trips() -> None:
    frame = encode_frame({"v": 1, "id": "a", "type": "hello", "versions": [1]})

    async def go() -> bytes:
        return await read_frame(_reader(frame))

    assert decode_payload(asyncio.run(go())) == {
        "v": 1,
        "id": "a",
        "type": "hello",
        "versions": [1],
    }


def test_an_oversized_declared_length_is_refused_before_reading() -> None:
    header = struct.pack(">I", MAX_REQUEST_BYTES + 1)

    async def go() -> bytes:
        return await read_frame(_reader(header, eof=False))  # no payload: never read

    with pytest.raises(FrameTooLarge):
        asyncio.run(go())


def test_a_partial_frame_times_out() -> None:
    async def go() -> bytes:
        return await read_frame(_reader(struct.pack(">I", 10) + b"abc", eof=False), timeout=0.2)

    with pytest.raises(WireError, match="timed out"):
        asyncio.run(go())


def test_a_clean_close_between_frames_is_peer_closed() -> None:
    async def go() -> bytes:
        return await read_frame(_reader(b""))

    with pytest.raises(PeerClosed):
        asyncio.run(go())


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xff\xfe", "UTF-8"),
        (b"{not json", "JSON"),
        (b"[1,2]", "object"),
        (b'{"a": NaN}', "JSON"),
        (b"[" * 100000, "JSON"),
    ],
)
def test_junk_payloads_are_wire_errors(payload: bytes, reason: str) -> None:
    with pytest.raises(WireError, match=reason):
        decode_payload(payload)


def test_blocking_helpers_round_trip_over_a_socketpair() -> None:
    left, right = socket.socketpair()
    with left, right:
        send_message(left, {"v": 1, "id": "x", "ok": True, "result": {}})
        assert recv_message(right)["id"] == "x"
        left.close()
        with pytest.raises(PeerClosed):
            recv_message(right)


def test_a_valid_proposal_parses() -> None:
    message = AGENT.validate_python(
        {
            "v": 1,
            "id": "r1",
            "type": "propose",
            "action": "ssh_exec",
            "host_id": "build-staging",
            "command_id": "read_service_status",
            "args": {"service": "worker"},
        }
    )
    assert isinstance(message, ProposeSsh)


@pytest.mark.parametrize(
    "mutation",
    [
        {"extra": 1},
        {"v": 2},
        {"v": "1"},
        {"host_id": "-oProxyCommand=x"},
        {"host_id": "a" * 65},
        {"args": {"service": ["list"]}},
        {"args": {"service": True}},
        {"args": {"Bad-Name": "x"}},
        {"id": ""},
    ],
)
def test_proposals_outside_the_contract_are_rejected(mutation: dict[str, object]) -> None:
    message = {
        "v": 1,
        "id": "r1",
        "type": "propose",
        "action": "ssh_exec",
        "host_id": "h",
        "command_id": "c",
        "args": {},
        **mutation,
    }
    with pytest.raises(ValidationError):
        AGENT.validate_python(message)
