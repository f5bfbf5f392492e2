"""The context server's agent profile over MCP stdio, against a real gateway process.

The model sees typed tools built from the accepted policy's catalog, its proposals wait for a
human's card, refusals come from the gateway, and the reads journal keeps only argument shapes.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.gateway import Gateway, clean_env, decide, wait_card

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.tools"

TYPED = "ssh_build-staging_read_service_status"
MARKER = "worker-canary-7"  # a valid service name that must not reach the reads journal


def _params(gateway: Gateway, workspace: Path, profile: str) -> StdioServerParameters:
    # flock is the requester's client (a plain binary), so the test may act as the approver.
    return StdioServerParameters(
        command="flock",
        args=["-s", str(gateway.home / "client.lock"), sys.executable, "-m", "safeport",
              "context", "serve", "--root", str(workspace), "--profile", profile,
              "--origin", "agent-test"],
        env=clean_env(gateway.home),
    )  # fmt: skip


def _session(gateway: Gateway, workspace: Path, profile: str, body: Any, mode: str = "auto") -> Any:
    async def run() -> Any:
        with anyio.fail_after(90):
            errlog = (gateway.home / f"context-{profile}.stderr").open("w")
            with errlog:
                params = _params(gateway, workspace, profile)
                async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                    return await body(client)

    return anyio.run(run)


def _approve_next(gateway: Gateway, approve: bool = True) -> threading.Thread:
    def answer() -> None:
        card = wait_card(gateway, timeout=30)
        decide(gateway, card["id"], approve)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_the_agent_profile_proposes_through_the_gateway(gateway: Gateway, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n")

    async def body(client: Client) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        catalog = await client.call_tool("list_actions", {})
        approver = _approve_next(gateway)
        typed = await client.call_tool(TYPED, {"service": MARKER})
        approver.join(30)
        hostile = await client.call_tool(TYPED, {"service": "-oProxyCommand=touch /tmp/x"})
        generic_denied = await client.call_tool(
            "ssh_exec", {"host_id": "build-staging", "command_id": "nope", "args": {}}
        )
        approver = _approve_next(gateway, approve=False)
        said_no = await client.call_tool(
            "ssh_exec",
            {"host_id": "build-staging", "command_id": "read_service_status",
             "args": {"service": "api"}},
        )  # fmt: skip
        approver.join(30)
        return {
            "tools": tools,
            "catalog": catalog,
            "typed": typed,
            "hostile": hostile,
            "generic_denied": generic_denied,
            "said_no": said_no,
        }

    out = _session(gateway, workspace, "agent", body)
    tools = out["tools"]
    assert {"read_file", "list_actions", "ssh_exec", "http_request", TYPED} <= set(tools)
    schema = tools[TYPED].input_schema["properties"]["service"]
    assert schema["type"] == "string" and schema["pattern"] == "^[a-z0-9-]{1,48}$"
    assert tools[TYPED].annotations.read_only_hint is False

    actions = out["catalog"].structured_content["actions"]
    entry = next(a for a in actions if a["operation"] == "read_service_status")
    assert entry["tool"] == TYPED and entry["approval"] == "per-call"

    assert not out["typed"].is_error
    assert out["typed"].structured_content["stdout"] == "active (running)\n"
    assert out["hostile"].is_error and "denied" in out["hostile"].content[0].text
    assert out["generic_denied"].is_error and "denied" in out["generic_denied"].content[0].text
    assert out["said_no"].is_error and "denied" in out["said_no"].content[0].text

    executed = [e for e in gateway.touched() if e["event"] == "executor.ssh"]
    assert len(executed) == 1  # only the approved proposal ran

    reads = (gateway.home / "audit" / "reads.jsonl").read_text()
    assert MARKER not in reads  # argument values stay out of the reads journal
    tools_journaled = [json.loads(line)["body"]["tool"] for line in reads.splitlines()]
    assert tools_journaled.count("ssh_exec") == 4


def test_the_reader_profile_has_no_way_to_act(gateway: Gateway, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def body(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    names = _session(gateway, workspace, "reader", body)
    assert "read_file" in names
    assert not names & {"list_actions", "ssh_exec", "http_request", TYPED}


def test_a_waiting_proposal_reports_progress_naming_its_card(
    gateway: Gateway, tmp_path: Path
) -> None:
    """Clients that reset their request timeout on progress keep waiting for a slow human."""
    from harness.gateway import POLICY

    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30"))
    gateway.accept_policy()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    heard: list[tuple[float, str]] = []
    answered: dict[str, Any] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((time.monotonic(), message or ""))

    def slow_human() -> None:
        card = wait_card(gateway, timeout=30)
        answered["card"] = card["id"]
        # Answer once three notices have come (two intervals of waiting), well before the
        # 30 s approval timeout even on a loaded machine; not after a guessed sleep.
        deadline = time.monotonic() + 25
        while len(heard) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        decide(gateway, card["id"])

    async def body(client: Client) -> Any:
        human = threading.Thread(target=slow_human, daemon=True)
        human.start()
        started = time.monotonic()
        result = await client.call_tool(
            "ssh_exec",
            {"host_id": "build-staging", "command_id": "read_service_status",
             "args": {"service": "api"}},
            progress_callback=on_progress,
        )  # fmt: skip
        human.join(30)
        return started, result

    # A 2025-11-25 client hears progress; a 2026-07-28 one (the other tests here) gets
    # input_required and its SDK retries.
    started, result = _session(gateway, workspace, "agent", body, mode="legacy")
    assert not result.is_error
    assert len(heard) >= 3, heard
    first = heard[0][1]
    assert answered["card"] in first and "sp approvals watch" in first
    moments = [started] + [at for at, _ in heard]
    # Every 5 s (PROGRESS_EVERY_S); the bound leaves room for a loaded machine and still
    # catches an interval four times as long.
    assert max(b - a for a, b in itertools.pairwise(moments)) <= 20
    assert all(answered["card"] in message for _, message in heard)
