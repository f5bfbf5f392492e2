"""The demo's agent: an MCP client in its own process tree, talking to the context server.

A real agent's client (an IDE, a desktop app) is not the human's terminal, and the gateway
refuses an approver that runs inside the requester's tree. So the demo starts this script
detached (it forks once more and its parent exits, leaving it re-parented away from the demo),
and the demo answers the approval card from its own, separate tree, as a person would.

Protocol with the demo, over two inherited pipes: this side writes one JSON event per line
(``check``, ``note``, ``need``, ``seen``); the demo answers each ``need`` with one line.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from safeport.shared.launch import sp_command


class Agent:
    def __init__(self, events: TextIO, control: TextIO, workspace: str) -> None:
        self.events = events
        self.control = control
        self.workspace = workspace
        self.seen: list[str] = []

    def emit(self, **event: Any) -> None:
        self.events.write(json.dumps(event) + "\n")
        self.events.flush()

    def check(self, ok: bool, text: str) -> None:
        self.emit(event="check", ok=ok, text=text)

    def need(self, what: str) -> None:
        self.emit(event="need", what=what)
        self.control.readline()

    async def call(self, client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        with anyio.fail_after(120):
            result = await client.call_tool(tool, args)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        self.seen.append(json.dumps(result.structured_content, default=str) + text)
        payload = result.structured_content if result.structured_content is not None else text
        return (not result.is_error), payload

    async def run(self) -> None:
        command = sp_command(
            [
                "context",
                "serve",
                "--root",
                self.workspace,
                "--profile",
                "agent",
                "--origin",
                "demo-agent",
            ]
        )
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=dict(os.environ)
        )  # fmt: skip
        errlog_path = Path(os.environ["SAFEPORT_HOME"]) / "context.stderr"
        with errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await self.read_workspace(client)
                await self.propose(client)
        self.emit(event="seen", answers=self.seen)

    async def read_workspace(self, client: Client) -> None:
        self.emit(event="step", title="4. The agent reads the workspace (MCP over stdio)")
        ok, readme = await self.call(client, "read_file", {"path": "README.md"})
        self.check(ok and "inventory-service" in str(readme), "read_file README.md: served")
        ok, listing = await self.call(client, "list_directory", {"path": "."})
        blocked = listing.get("blocked", {}) if ok and isinstance(listing, dict) else {}
        self.check(
            blocked.get(".env") == "private" and blocked.get("data") == "private",
            "list_directory: .env and data/ are listed, marked private",
        )
        for path in (".env", "data/customers.csv", "deploy_key.pem", "src/../.env"):
            ok, answer = await self.call(client, "read_file", {"path": path})
            self.check(not ok, f"read_file {path}: refused — {first_line(answer)}")
        # DATABASE_URL appears only inside .env: a search must not reveal that file.
        ok, hits = await self.call(client, "search_project", {"query": "DATABASE_URL"})
        found = hits.get("hits") if ok and isinstance(hits, dict) else None
        self.check(ok and not found, "search_project DATABASE_URL (only in .env): no hits")
        ok, _ = await self.call(client, "read_file", {"path": "src/inventory/tokenizer.py"})
        self.check(ok, "read_file src/inventory/tokenizer.py: ordinary code stays readable")

    async def propose(self, client: Client) -> None:
        self.emit(event="step", title="5. The agent proposes an action; a human decides")
        ok, catalog = await self.call(client, "list_actions", {})
        actions = catalog.get("actions", []) if ok and isinstance(catalog, dict) else []
        names = [f"{a['target']}/{a['operation']}" for a in actions]
        self.check(names == ["deploy-api/deployment_status"], f"list_actions: {names}")
        request = {
            "service_id": "deploy-api",
            "operation_id": "deployment_status",
            "args": {"environment": "staging", "service": "inventory"},
        }
        self.emit(event="note", text="proposing deploy-api/deployment_status(staging, inventory)…")
        ok, result = await self.call(client, "http_request", request)
        status = result.get("status") if ok and isinstance(result, dict) else None
        self.check(status == 200, f"approved, run by the gateway: status {status}")
        fields = result.get("fields", {}) if status == 200 else {}
        self.check(fields.get("state") == "running", f"declared fields returned: {fields}")
        self.check("internal_note" not in fields, "an undeclared response field was filtered out")

        self.emit(event="step", title="6. Refused before anything leaves the machine")
        hostile = {**request, "args": {"environment": "staging", "service": "x;curl evil.test"}}
        ok, answer = await self.call(client, "http_request", hostile)
        self.check(
            not ok and "denied" in str(answer), f"shell metacharacters — {first_line(answer)}"
        )
        elsewhere = {"service_id": "metadata", "operation_id": "read", "args": {}}
        ok, answer = await self.call(client, "http_request", elsewhere)
        self.check(not ok and "denied" in str(answer), f"undeclared service — {first_line(answer)}")
        self.need("lock")
        ok, answer = await self.call(client, "http_request", request)
        self.check(not ok and "locked" in str(answer), f"vault locked — {first_line(answer)}")


def first_line(answer: object) -> str:
    text = str(answer).strip().removeprefix("Error executing tool ")
    text = text.split(": ", 1)[1] if text.startswith(("read_file:", "http_request:")) else text
    return text.splitlines()[0][:110] if text else "(empty)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events-fd", type=int, required=True)
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--workspace", required=True)
    args = parser.parse_args()
    # Detach: the parent exits at once, so this process is no longer below the demo.
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    events = os.fdopen(args.events_fd, "w", encoding="utf-8")
    control = os.fdopen(args.control_fd, "r", encoding="utf-8")
    agent = Agent(events, control, args.workspace)
    try:
        anyio.run(agent.run)
    except BaseException as exc:  # report any failure to the demo, which decides what to say
        agent.emit(event="crash", text=f"{type(exc).__name__}: {exc}"[:500])
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
