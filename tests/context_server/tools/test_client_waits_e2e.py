"""Real MCP clients wait for a human as long as they can: a client that hears progress and resets
its timeout on it outlasts its own timeout; one that sends no progress token has its card
expire before it would give up, so the refusal (not a cancel) reaches it.

Against a real gateway process, with the real TypeScript SDK client (npm), the real MCP
Inspector CLI, and the MCP Python SDK client over stdio."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from harness.gateway import POLICY, Gateway, clean_env, decide, wait_card
from safeport.context_server.tools.agent_tools import PLAIN_CLIENT_WAIT_S, PROGRESS_EVERY_S
from tests.conftest import need
from tests.context_server.test_inspector import INSPECTOR

REPO = Path(__file__).resolve().parents[3]
TS_CLIENT = REPO / "node_modules" / "@modelcontextprotocol" / "client" / "dist"
TYPED = "ssh_build-staging_read_service_status"

pytestmark = pytest.mark.integration

# The TypeScript SDK client as an application uses it: a request timeout, progress heard, and
# resetTimeoutOnProgress set or not (the SDK's default is not).
TS_SCRIPT = """
import { Client } from "%(client)s/index.mjs";
import { StdioClientTransport } from "%(client)s/stdio.mjs";
const c = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({command: c.command, args: c.args, env: c.env,
                                           stderr: "ignore"});
const client = new Client({name: "ts-sdk-app", version: "1.0.0"});
await client.connect(transport);
let heard = 0;
try {
  const result = await client.callTool({name: c.tool, arguments: c.arguments},
    {timeout: c.timeout_ms, resetTimeoutOnProgress: c.reset, onprogress: () => { heard++; }});
  console.log(JSON.stringify({ok: true, heard, result}));
} catch (error) {
  console.log(JSON.stringify({ok: false, heard, error: String(error)}));
}
await client.close();
"""


def server_argv(gateway: Gateway, workspace: Path) -> list[str]:
    # flock is the requester's client (a plain binary), so the test may act as the approver.
    return ["flock", "-s", str(gateway.home / "client.lock"), sys.executable, "-m", "safeport",
            "context", "serve", "--root", str(workspace), "--profile", "agent",
            "--origin", "waits-test"]  # fmt: skip


def human(gateway: Gateway, seen: dict[str, Any], after: float = 0.0) -> threading.Thread:
    """Approve the next card ``after`` seconds past its opening, noting what it said."""

    def answer() -> None:
        card = wait_card(gateway, timeout=60)
        seen.update(card)
        time.sleep(after)
        decide(gateway, card["id"])

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def patient_policy(gateway: Gateway) -> Gateway:
    """The policy waits 120 s for a human, as the starter policy does."""
    gateway.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 120"))
    gateway.accept_policy()
    return gateway


def test_a_client_that_resets_on_progress_outlasts_its_own_timeout(
    patient_policy: Gateway, tmp_path: Path
) -> None:
    need(shutil.which("node") is not None, "node is not installed")
    need((TS_CLIENT / "index.mjs").exists(), "the MCP TypeScript SDK is not installed (npm ci)")
    gateway, workspace = patient_policy, tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "app.mjs"
    script.write_text(TS_SCRIPT % {"client": TS_CLIENT})
    # The client's own timeout is two progress intervals; the human answers after four, so
    # only the progress notifications keep it waiting.
    timeout_ms = int(PROGRESS_EVERY_S * 2 * 1000)
    argv = server_argv(gateway, workspace)
    config = {"command": argv[0], "args": argv[1:], "env": clean_env(gateway.home),
              "tool": TYPED, "arguments": {"service": "api"}, "timeout_ms": timeout_ms,
              "reset": True}  # fmt: skip
    seen: dict[str, Any] = {}
    approver = human(gateway, seen, after=PROGRESS_EVERY_S * 4)
    done = subprocess.run(
        ["node", str(script), json.dumps(config)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    approver.join(60)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["ok"] is True, answer
    assert answer["result"]["structuredContent"]["stdout"] == "active (running)\n"
    assert answer["heard"] >= 3
    assert seen["timeout_s"] == 120  # a client that hears progress gets the policy's wait


def test_the_inspector_cli_gets_a_card_that_expires_before_it_gives_up(
    patient_policy: Gateway, tmp_path: Path
) -> None:
    """The Inspector CLI sends no progress token and stops at 60 s whatever the server says."""
    need(INSPECTOR.exists(), "the MCP Inspector is not installed (run `npm ci`)")
    gateway, workspace = patient_policy, tmp_path / "ws"
    workspace.mkdir()
    env = clean_env(gateway.home)
    argv = [str(INSPECTOR), "--cli", *(f"-e{k}={v}" for k, v in env.items()),
            "--method", "tools/call", "--tool-name", TYPED, "--tool-arg", "service=api",
            "--", *server_argv(gateway, workspace)]  # fmt: skip
    seen: dict[str, Any] = {}
    approver = human(gateway, seen)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    approver.join(60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"]["stdout"] == "active (running)\n"
    assert seen["timeout_s"] == PLAIN_CLIENT_WAIT_S < 60


def test_the_python_sdk_client_gets_the_wait_its_call_can_survive(
    patient_policy: Gateway, tmp_path: Path
) -> None:
    """Without a progress callback (no token) the card is shortened; with one, the policy's."""
    gateway, workspace = patient_policy, tmp_path / "ws"
    workspace.mkdir()
    argv = server_argv(gateway, workspace)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=clean_env(gateway.home))
    plain: dict[str, Any] = {}
    heard: dict[str, Any] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    async def run() -> Any:
        with anyio.fail_after(90):
            async with Client(stdio_client(params), mode="legacy") as client:
                approver = human(gateway, plain)
                first = await client.call_tool(TYPED, {"service": "api"})
                approver.join(60)
                approver = human(gateway, heard)
                second = await client.call_tool(
                    TYPED, {"service": "api"}, progress_callback=on_progress
                )
                approver.join(60)
                return first, second

    first, second = anyio.run(run)
    assert not first.is_error and not second.is_error
    assert plain["timeout_s"] == PLAIN_CLIENT_WAIT_S
    assert heard["timeout_s"] == 120
