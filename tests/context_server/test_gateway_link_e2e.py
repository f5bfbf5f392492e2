"""The context server's gateway link against the real gateway: catalog, propose, approve, cancel."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.gateway import REPO, Gateway, clean_env, decide, wait_card, wait_until

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server"

LINK = """
import asyncio, json, sys
from pathlib import Path
from safeport.context_server.gateway_link import GatewayLink, GatewayRefusal

async def main():
    link = GatewayLink(Path(sys.argv[1]), reply_timeout_s=20)
    catalog = await link.catalog()
    print(json.dumps({"actions": len(catalog["actions"])}), flush=True)
    try:
        result = await link.propose_ssh("build-staging", "read_service_status", {"service": "api"})
        print(json.dumps({"ok": result}), flush=True)
    except GatewayRefusal as exc:
        print(json.dumps({"error": exc.code}), flush=True)
    task = asyncio.create_task(link.propose_ssh("build-staging", "tail_log", {"lines": 5}))
    await asyncio.sleep(float(sys.argv[2]))
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print(json.dumps({"cancelled": True}), flush=True)

asyncio.run(main())
"""


def test_the_context_servers_link_speaks_the_gateways_protocol(gateway: Gateway) -> None:
    proc = subprocess.Popen(
        [
            "flock",
            "-s",
            str(gateway.home / "client.lock"),
            sys.executable,
            "-c",
            LINK,
            str(gateway.agent_path),
            "1.0",
        ],
        cwd=REPO,
        env=clean_env(gateway.home),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["actions"] >= 5
    card = wait_card(gateway)
    assert ["command", "systemctl status --no-pager api"] in card["fields"]
    assert decide(gateway, card["id"])["ok"]
    assert json.loads(proc.stdout.readline())["ok"]["stdout"] == "active (running)\n"
    # The second proposal waits on a card; the MCP call is cancelled; the card is withdrawn.
    wait_card(gateway)
    assert json.loads(proc.stdout.readline()) == {"cancelled": True}
    wait_until(lambda: gateway.control("approvals.list")["result"]["cards"] == [])
    assert proc.wait(10) == 0
    executed = [e for e in gateway.touched() if e["event"] == "executor.ssh"]
    assert [e["command"] for e in executed] == ["read_service_status"]
