"""Catch-alls in the gateway say what they caught (its type and where it was raised) in the
gateway's log, and never its value: an exception raised with a secret in hand may carry it."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.handlers.agent_sock import AgentHandler
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.ladder.outcome import Executed, ProposalOutcome
from safeport.action_gateway.sockets.connection import Connection, Handler, ServerLimits
from safeport.action_gateway.sockets.peer_socket import PeerSocket
from safeport.action_gateway.sockets.server import SocketServer
from safeport.shared.exception_summary import summarize
from safeport.shared.schemas.wire import HttpResult, SshExecResult
from safeport.shared.wire import recv_message, send_message

CANARY = "CANARY-SECRET-in-an-exception-3f9"
PROPOSAL = {
    "v": 1,
    "id": "p1",
    "type": "propose",
    "action": "ssh_exec",
    "host_id": "build-staging",
    "command_id": "read_service_status",
    "args": {"service": "worker"},
}


# A whole result, as the ladder answers an SSH proposal.
RESULT = {
    "exit_status": 0,
    "stdout": "ok\n",
    "stderr": "",
    "stdout_truncated": False,
    "stderr_truncated": False,
    "duration_ms": 3,
}


class LadderWithABug:
    """The core as the agent handler sees it, with a propose that fails like a bug would."""

    def __init__(self, failure: BaseException | None) -> None:
        self.failure = failure

    def on_card_opened(self, callback: object) -> None:
        return None

    def agent_connected(self, key: int, peer: PeerIdentity) -> None:
        return None

    def agent_left(self, key: int) -> None:
        return None

    def withdraw(self, peer: PeerIdentity, request_id: str) -> bool:
        return False

    def reply_cap(self) -> int | None:
        return None

    def propose(
        self, peer: PeerIdentity, proposal: object, cancel: threading.Event
    ) -> ProposalOutcome:
        if self.failure is not None:
            raise self.failure
        return Executed(SshExecResult.model_validate(RESULT))


async def _propose_through(core: LadderWithABug) -> dict[str, Any]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    peer = LinuxProbe().resolve(ours)
    with ThreadPoolExecutor(max_workers=1) as pool:
        handler = AgentHandler(cast(GatewayCore, core), pool)
        conn = Connection(peer=peer, channel=PeerSocket(ours), limits=ServerLimits())
        await handler.opened(conn)
        await handler.message(conn, dict(PROPOSAL))
        await asyncio.gather(*conn.tasks)
        await handler.closed(conn)
    theirs.settimeout(5)
    reply = recv_message(theirs)
    conn.close()
    theirs.close()
    return reply


def test_a_ladder_bug_is_answered_internal_and_logged_by_type_and_place_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="safeport.gateway")
    reply = asyncio.run(_propose_through(LadderWithABug(KeyError(CANARY))))
    assert reply["error"] == {"code": "internal", "reason": "the gateway failed on this request"}
    logged = [r.getMessage() for r in caplog.records if r.name == "safeport.gateway"]
    failure = [line for line in logged if "internal error" in line]
    assert len(failure) == 1
    assert "KeyError at test_catch_alls.py:" in failure[0] and "in propose" in failure[0]
    assert "ssh_exec build-staging/read_service_status" in failure[0]
    assert not any(CANARY in line for line in logged)
    assert CANARY not in str(reply)


def test_a_proposal_that_succeeds_is_answered_with_its_result_and_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="safeport.gateway")
    reply = asyncio.run(_propose_through(LadderWithABug(None)))
    assert reply["ok"] is True and reply["id"] == "p1"
    assert {key: reply["result"][key] for key in RESULT} == RESULT
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


class AnswersAnotherKind(LadderWithABug):
    """A ladder that answers an SSH proposal with an HTTPS result."""

    def propose(
        self, peer: PeerIdentity, proposal: object, cancel: threading.Event
    ) -> ProposalOutcome:
        return Executed(HttpResult(status=200, fields={"state": CANARY}))


def test_a_result_of_another_kind_than_proposed_is_never_sent() -> None:
    reply = asyncio.run(_propose_through(AnswersAnotherKind(None)))
    assert reply["error"] == {"code": "internal", "reason": "the gateway failed on this request"}
    assert CANARY not in str(reply)


class ClosesBadly(Handler):
    """Withdrawing a connection's cards fails (``fail``) or works."""

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.closed_connections: list[int] = []

    async def message(self, conn: Connection, data: dict[str, Any]) -> None:
        return None

    async def closed(self, conn: Connection) -> None:
        if self.fail:
            raise RuntimeError(CANARY)
        self.closed_connections.append(conn.peer.pid)


class CountingProbe(LinuxProbe):
    def __init__(self) -> None:
        super().__init__()
        self.released = 0

    def release(self, identity: PeerIdentity) -> None:
        self.released += 1
        super().release(identity)


def _junk_then_hang_up(path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(5)
        client.connect(str(path))
        send_message(client, {"v": 2, "id": "x"})  # junk: counted, journaled at close
        assert recv_message(client)["error"]["code"] == "invalid"


async def _connect_and_hang_up(tmp: Path, handler: ClosesBadly, probe: CountingProbe) -> None:
    junk: list[dict[str, int]] = []

    async def on_junk(conn: Connection) -> None:
        junk.append(dict(conn.junk))

    with ThreadPoolExecutor(max_workers=1) as pool:
        server = SocketServer(
            "test",
            tmp / "t.sock",
            handler,
            probe=probe,
            pool=pool,
            limits=ServerLimits(),
            max_connections=lambda: 4,
            on_refused=lambda _category: None,
            on_junk=on_junk,
        )
        await server.start()
        await asyncio.to_thread(_junk_then_hang_up, tmp / "t.sock")
        for _ in range(500):
            if probe.released:
                break
            await asyncio.sleep(0.01)
        await server.close()
    assert junk == [{"version": 1}]  # the junk counts still reach their journal


def test_a_failing_close_is_logged_by_type_and_place_and_the_peer_is_still_released(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="safeport.gateway")
    probe = CountingProbe()
    asyncio.run(_connect_and_hang_up(tmp_path, ClosesBadly(fail=True), probe))
    assert probe.released == 1
    logged = [r.getMessage() for r in caplog.records if r.name == "safeport.gateway"]
    failure = [line for line in logged if "closing a connection failed" in line]
    assert len(failure) == 1, logged
    assert "RuntimeError at test_catch_alls.py:" in failure[0] and "in closed" in failure[0]
    assert not any(CANARY in line for line in logged)


def test_a_clean_close_withdraws_through_the_handler_and_logs_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="safeport.gateway")
    probe = CountingProbe()
    handler = ClosesBadly(fail=False)
    asyncio.run(_connect_and_hang_up(tmp_path, handler, probe))
    assert probe.released == 1 and len(handler.closed_connections) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_summary_names_the_type_and_the_innermost_frame_but_never_the_value() -> None:
    def inner() -> None:
        raise ValueError(CANARY)

    try:
        inner()
    except ValueError as exc:
        text = summarize(exc)
    assert text.startswith("ValueError at test_catch_alls.py:") and text.endswith("in inner")
    assert CANARY not in text
    assert summarize(KeyError(CANARY)) == "KeyError"  # never raised: no place to name
