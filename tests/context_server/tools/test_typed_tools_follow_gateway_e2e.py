"""A client that starts before the gateway gets the typed tools without restarting.

The real MCP SDK client speaks to a real ``sp context serve --profile agent`` over stdio while a
real gateway comes up locked, is unlocked, and is given a policy: ``list_actions`` says at each
step what the typed tools wait for, and once the policy is accepted the client hears
``notifications/tools/list_changed`` and finds the typed tool in its next ``tools/list``.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.gateway import Gateway, clean_env, decide, wait_card

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.tools"

TYPED = "ssh_build-staging_read_service_status"


def _params(gateway: Gateway, workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command="flock",
        args=["-s", str(gateway.home / "client.lock"), sys.executable, "-m", "safeport",
              "context", "serve", "--root", str(workspace), "--profile", "agent",
              "--origin", "agent-test"],
        env=clean_env(gateway.home),
    )  # fmt: skip


class Heard:
    """The tools/list_changed notifications the client received."""

    def __init__(self) -> None:
        self.changed = anyio.Event()
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.changed.set()


async def _names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def _why(client: Client) -> str:
    result = await client.call_tool("list_actions", {})
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


# The handshake era (what today's clients speak) and the 2026 protocol the SDK's client picks.
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_started_before_the_gateway_gets_the_typed_tools_once_a_policy_is_served(
    gateway_home: Path, tmp_path: Path, mode: str
) -> None:
    gateway = Gateway(gateway_home)
    gateway.write_policy()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    heard = Heard()
    seen: dict[str, Any] = {}

    async def run() -> None:
        errlog_path = gateway.home / "context-agent.stderr"
        with errlog_path.open("w") as errlog, anyio.fail_after(120):
            params = _params(gateway, workspace)
            async with (
                Client(
                    stdio_client(params, errlog=errlog), message_handler=heard, mode=mode
                ) as client,
                anyio.create_task_group() as tasks,
            ):
                if mode != "legacy":  # 2026 protocol: changes come on a listen stream
                    await tasks.start(_listen, client, heard)
                assert client.server_capabilities.tools.list_changed  # type: ignore[union-attr]
                seen["before"] = await _names(client)
                seen["down"] = await _why(client)

                gateway.start()
                seen["locked"] = await _why(client)
                gateway.unlock()
                seen["no_policy"] = await _why(client)
                assert heard.count == 0

                gateway.accept_policy()
                with anyio.fail_after(15):  # the watch looks every few seconds
                    await heard.changed.wait()
                seen["after"] = await _names(client)
                listed = await client.call_tool("list_actions", {})
                seen["actions"] = listed.structured_content["actions"]

                approver = threading.Thread(target=_approve_next, args=(gateway, seen), daemon=True)
                approver.start()
                seen["typed"] = await client.call_tool(TYPED, {"service": "api"})
                approver.join(30)
                tasks.cancel_scope.cancel()

    try:
        anyio.run(run)
    finally:
        if gateway.proc is not None:
            assert gateway.stop() == 0, gateway.stderr_path.read_text()

    assert "list_actions" in seen["before"] and TYPED not in seen["before"]
    assert "not running" in seen["down"] and "sp gateway run" in seen["down"]
    assert "appear by themselves" in seen["down"]
    assert "locked" in seen["locked"] and "sp vault unlock" in seen["locked"]
    assert "no accepted policy" in seen["no_policy"] and "sp policy accept" in seen["no_policy"]
    assert TYPED in seen["after"]
    entry = next(a for a in seen["actions"] if a["operation"] == "read_service_status")
    assert entry["tool"] == TYPED and entry.get("no_tool") is None
    assert all(a["tool"] for a in seen["actions"])  # every action has its typed tool
    assert not seen["typed"].is_error, seen["typed"]
    assert seen["typed"].structured_content["stdout"] == "active (running)\n"
    # The card names the label the client's entry gave the server (--origin).
    assert seen["card"]["client_label"] == "agent-test"


async def _listen(client: Client, heard: Heard, *, task_status: Any) -> None:
    async with client.listen(tools_list_changed=True) as subscription:
        task_status.started()
        async for _event in subscription:
            await heard(types.ToolListChangedNotification())


def _approve_next(gateway: Gateway, seen: dict[str, Any]) -> None:
    card = wait_card(gateway, timeout=30)
    seen["card"] = card
    decide(gateway, card["id"], True)
