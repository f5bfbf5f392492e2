"""The held agent.sock connection the per-request checks ride on, against a real gateway: one
connection for many questions, replaced when the gateway restarts, and a clear refusal (never a
stale answer) while it is down."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from harness.gateway import Gateway
from safeport.context_server.gateway_link import GatewayLink, GatewayUnavailable, HeldLink

CHECK = {"type": "oauth_check", "client_id": "nobody", "token_id": "token-00000001"}


def test_one_connection_serves_many_checks_and_is_replaced_after_a_restart(
    gateway: Gateway,
) -> None:
    async def scenario() -> None:
        held = HeldLink(GatewayLink(gateway.agent_path, reply_timeout_s=5))
        before = _sockets()
        answers = [await held.ask(CHECK) for _ in range(20)]
        assert all(answer["active"] is False for answer in answers)  # an unknown client
        assert _sockets() == before + 1  # one connection for all 20
        assert await anyio.to_thread.run_sync(gateway.stop) == 0
        with pytest.raises(GatewayUnavailable):
            await held.ask(CHECK)
        await anyio.to_thread.run_sync(gateway.start)
        await anyio.to_thread.run_sync(gateway.unlock)
        assert (await held.ask(CHECK))["active"] is False
        held.close()

    anyio.run(scenario)


def _sockets() -> int:
    return len([fd for fd in os.listdir("/proc/self/fd") if _is_socket(fd)])


def _is_socket(fd: str) -> bool:
    try:
        return os.readlink(Path("/proc/self/fd") / fd).startswith("socket:")
    except OSError:
        return False
