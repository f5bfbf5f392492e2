"""A realistic working session through the agent profile costs the human exactly three cards:
20 workspace reads (no card), 10 calls on a session-scoped credential (one card, then the
session grant), and 2 actions on a per-call credential (one card each). README states it."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.gateway import POLICY, Gateway, clean_env, decide

# Long enough for a loaded machine; the approver answers within a fraction of a second.
SESSION_POLICY = POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30")


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(SESSION_POLICY)
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


class Approver(threading.Thread):
    """A human who approves every card, counting them."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(daemon=True)
        self.gateway = gateway
        self.cards: list[dict[str, Any]] = []
        self.done = threading.Event()

    def run(self) -> None:
        seen: set[str] = set()
        while not self.done.is_set():
            for card in self.gateway.control("approvals.list")["result"]["cards"]:
                if card["id"] not in seen:
                    seen.add(card["id"])
                    self.cards.append(card)
                    decide(self.gateway, card["id"], True)
            time.sleep(0.05)


def test_twenty_reads_ten_session_calls_two_per_call_actions_make_three_cards(
    gateway: Gateway, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for number in range(5):
        (workspace / f"module_{number}.py").write_text(f"VALUE = {number}\n")
    params = StdioServerParameters(
        command="flock",
        args=["-s", str(gateway.home / "client.lock"), sys.executable, "-m", "safeport",
              "context", "serve", "--root", str(workspace), "--profile", "agent",
              "--origin", "scenario"],
        env=clean_env(gateway.home),
    )  # fmt: skip
    approver = Approver(gateway)
    approver.start()
    results: dict[str, list[Any]] = {"reads": [], "session": [], "per_call": []}

    async def session() -> None:
        with anyio.fail_after(240):
            with (gateway.home / "context.stderr").open("w") as errlog:
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    for number in range(20):
                        tool = ("read_file", "list_directory", "search_project", "get_file_info")[
                            number % 4
                        ]
                        args = {
                            "read_file": {"path": f"module_{number % 5}.py"},
                            "list_directory": {"path": "."},
                            "search_project": {"query": "VALUE"},
                            "get_file_info": {"path": f"module_{number % 5}.py"},
                        }[tool]
                        results["reads"].append(await client.call_tool(tool, args))
                    for _ in range(10):
                        results["session"].append(
                            await client.call_tool(
                                "ssh_exec",
                                {"host_id": "session-host", "command_id": "uptime", "args": {}},
                            )
                        )
                    for service in ("api", "worker"):
                        args = {"service": service}
                        proposal = {"host_id": "build-staging", "args": args,
                                    "command_id": "read_service_status"}  # fmt: skip
                        results["per_call"].append(await client.call_tool("ssh_exec", proposal))

    try:
        anyio.run(session)
    finally:
        approver.done.set()
        approver.join(5)
    assert all(not result.is_error for result in results["reads"])
    assert all(not r.is_error for r in results["session"] + results["per_call"]), [
        r.content for r in results["session"] + results["per_call"] if r.is_error
    ]
    kinds = [record["kind"] for record in gateway.journal("sessions")]
    assert len(approver.cards) == 3, (kinds, [c["scope"] for c in approver.cards])
    scopes = sorted(card["scope"] for card in approver.cards)
    assert scopes == ["per-call", "per-call", "session"], scopes
    executed = [e for e in gateway.touched() if e["event"] == "executor.ssh"]
    assert len(executed) == 12  # every approved call ran, each once
