"""A frame read and a reply written on a real socket pair: the header read whole or in pieces,
a reply written at once or in parts, and a reader that never reads closed at the write timeout."""

from __future__ import annotations

import asyncio
import socket
import threading

from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.sockets.connection import Connection, ServerLimits
from safeport.action_gateway.sockets.peer_socket import PeerSocket
from safeport.shared.schemas.replies import error_reply
from safeport.shared.wire import HEADER, encode_frame, recv_message


def _pair(limits: ServerLimits) -> tuple[socket.socket, socket.socket, ServerLimits]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # as agent.sock's connections
    return ours, theirs, limits


def test_a_header_sent_in_pieces_is_read_as_one_frame() -> None:
    ours, theirs, limits = _pair(ServerLimits(frame_timeout_s=5))
    peer = LinuxProbe().resolve(ours)
    frame = encode_frame({"v": 1, "id": "a"})

    async def read() -> bytes:
        conn = Connection(peer=peer, channel=PeerSocket(ours), limits=limits)
        try:
            loop = asyncio.get_running_loop()
            loop.call_later(0.01, theirs.sendall, frame[:1])
            loop.call_later(0.02, theirs.sendall, frame[1:3])
            loop.call_later(0.03, theirs.sendall, frame[3:])
            payload, senders = await conn.next_frame(None)
            assert senders == {peer.pid}  # every chunk's writer was read
            return payload
        finally:
            conn.close()

    try:
        assert asyncio.run(read()) == frame[HEADER.size :]
    finally:
        theirs.close()


def test_frames_sent_back_to_back_are_read_one_at_a_time() -> None:
    ours, theirs, limits = _pair(ServerLimits())
    peer = LinuxProbe().resolve(ours)
    first, second = encode_frame({"n": 1}), encode_frame({"n": 2})
    theirs.sendall(first + second)

    async def read() -> list[bytes]:
        conn = Connection(peer=peer, channel=PeerSocket(ours), limits=limits)
        try:
            return [(await conn.next_frame(None))[0] for _ in range(2)]
        finally:
            conn.close()

    try:
        assert asyncio.run(read()) == [first[HEADER.size :], second[HEADER.size :]]
    finally:
        theirs.close()


def test_a_reply_larger_than_the_socket_takes_at_once_arrives_whole() -> None:
    ours, theirs, limits = _pair(ServerLimits(write_timeout_s=10))
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer = LinuxProbe().resolve(ours)
    reason = "x" * 900
    received: list[dict[str, object]] = []
    started = threading.Event()

    def slow_reader() -> None:
        started.wait(10)  # the socket's buffer fills first: the rest of a frame must wait
        theirs.settimeout(10)
        for _ in range(40):
            received.append(recv_message(theirs))

    async def write() -> None:
        conn = Connection(peer=peer, channel=PeerSocket(ours), limits=limits)
        reader = threading.Thread(target=slow_reader)
        reader.start()
        try:
            loop = asyncio.get_running_loop()
            loop.call_later(0.1, started.set)
            for index in range(40):
                await conn.send(error_reply(f"r{index}", "invalid", reason))
            assert not conn.closed
        finally:
            await asyncio.to_thread(reader.join, 10)
            conn.close()

    try:
        asyncio.run(write())
    finally:
        theirs.close()
    assert [item["id"] for item in received] == [f"r{index}" for index in range(40)]


def test_a_peer_that_never_reads_is_closed_at_the_write_timeout() -> None:
    ours, theirs, limits = _pair(ServerLimits(write_timeout_s=0.2))
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer = LinuxProbe().resolve(ours)

    async def write() -> bool:
        conn = Connection(peer=peer, channel=PeerSocket(ours), limits=limits)
        for index in range(10_000):
            await conn.send(error_reply(f"r{index}", "invalid", "y" * 900))
            if conn.closed:
                return True
        return False

    try:
        assert asyncio.run(write())
    finally:
        theirs.close()
