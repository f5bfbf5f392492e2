"""The agent profile's SQL tools over MCP stdio, against a real gateway and a real PostgreSQL.

One typed tool per declared query (its params as named, schema-described arguments) and the
generic ``run_readonly_query`` beside ``ssh_exec`` and ``http_request``; both wait for a human's
card, and the reads journal keeps argument shapes, never values. The reader profile has neither.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.fakes import CANARY
from harness.gateway import Gateway, clean_env, decide, wait_card
from harness.real_postgres import Postgres
from tests.action_gateway.executors.sql_policy import policy_text

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.tools"

pytestmark = pytest.mark.integration

TYPED = "sql_app_orders_of"
MARKER = "carol-marker-5"  # a customer name that must not reach the reads journal


@pytest.fixture
def gateway(tmp_path: Path, postgres: Postgres) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(policy_text(postgres))
    gw.start("--real-executor")
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _session(gateway: Gateway, workspace: Path, profile: str, body: Any) -> Any:
    params = StdioServerParameters(
        command="flock",
        args=["-s", str(gateway.home / "client.lock"), sys.executable, "-m", "safeport",
              "context", "serve", "--root", str(workspace), "--profile", profile,
              "--origin", "agent-test"],
        env=clean_env(gateway.home),
    )  # fmt: skip

    async def run() -> Any:
        with anyio.fail_after(90):
            errlog = (gateway.home / f"context-{profile}.stderr").open("w")
            with errlog:
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    return await body(client)

    return anyio.run(run)


def _approve_next(gateway: Gateway) -> threading.Thread:
    thread = threading.Thread(
        target=lambda: decide(gateway, wait_card(gateway, timeout=30)["id"]), daemon=True
    )
    thread.start()
    return thread


def test_a_typed_query_tool_and_the_generic_one_propose_through_the_gateway(
    gateway: Gateway, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def body(client: Client) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        catalog = await client.call_tool("list_actions", {})
        approver = _approve_next(gateway)
        typed = await client.call_tool(TYPED, {"customer": MARKER})
        approver.join(30)
        again = await client.call_tool(TYPED, {"customer": "alice"})  # the session covers it
        approver = _approve_next(gateway)
        generic = await client.call_tool(
            "run_readonly_query",
            {"database": "app", "query": "order_count", "params": {"min_id": 2}},
        )
        approver.join(30)
        return {"tools": tools, "catalog": catalog, "typed": typed, "again": again,
                "generic": generic}  # fmt: skip

    out = _session(gateway, workspace, "agent", body)
    tools = out["tools"]
    assert {"run_readonly_query", TYPED, "sql_app_order_count", "sql_app_series"} <= set(tools)
    schema = tools[TYPED].input_schema["properties"]["customer"]
    assert schema["type"] == "string" and schema["pattern"] == "^.{1,80}$"
    assert "read-only SQL query" in (tools[TYPED].description or "")
    actions = out["catalog"].structured_content["actions"]
    entry = next(a for a in actions if a["operation"] == "orders_of")
    assert entry["action"] == "run_readonly_query" and entry["tool"] == TYPED
    assert entry["read_only"] is True and entry["approval"] == "session"

    assert not out["typed"].is_error and out["typed"].structured_content["rows"] == []
    rows = out["again"].structured_content["rows"]
    assert rows[0] == [1, "12.50", "first", "2026-01-02"]
    assert out["generic"].structured_content["rows"] == [[3]]

    reads = (gateway.home / "audit" / "reads.jsonl").read_text()
    assert MARKER not in reads and CANARY not in reads
    journaled = [json.loads(line)["body"]["tool"] for line in reads.splitlines()]
    assert journaled.count("run_readonly_query") == 3


def test_the_reader_profile_has_no_query_tool(gateway: Gateway, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    async def body(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    names = _session(gateway, workspace, "reader", body)
    assert not names & {"run_readonly_query", TYPED}
