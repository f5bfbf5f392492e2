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
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console

from safeport.demo.tls_service import serve_demo_api
from safeport.demo.workspace import build_workspace, policy_text
from safeport.errors import Error
from safeport.shared.launch import module_command, sp_command

Ask = Callable[[dict[str, Any]], bool]


class DemoFailed(Error):
    exit_code = 1
    wire_code = "denied"


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
    # mkdtemp, not TemporaryDirectory: the latter removes its folder when the object is
    # collected, so "keeping" it by dropping the context manager deleted it at once.
    home = Path(tempfile.mkdtemp(prefix="safeport-demo-"))
    try:
        _Scenario(home, story, ask).run()
        console.print(f"\n[bold green]demo complete:[/bold green] {story.checks} checks passed")
    finally:
        if keep:  # also after a failure: that is when the files are most wanted
            console.print(f"files kept in {home} (SAFEPORT_HOME={home / 'home'})", highlight=False)
        else:
            shutil.rmtree(home, ignore_errors=True)
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
            "COLUMNS": "96",
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
                self._run_agent()
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
            sp_command(["gateway", "run"]),
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
                code = process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            log.close()
        self.story.expect(
            code == 0, "`sp gateway stop`: vault locked, journal heads signed, exit 0"
        )

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

    def _run_agent(self) -> None:
        """Start the agent in its own process tree and follow its events until it finishes."""
        events_r, events_w = os.pipe()
        control_r, control_w = os.pipe()
        launcher = subprocess.Popen(
            module_command("safeport.demo.agent", [
                "--events-fd", str(events_w), "--control-fd", str(control_r),
                "--workspace", str(self.workspace)]),
            env=self.env,
            pass_fds=(events_w, control_r),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.home / "agent.stderr").open("wb"),
        )  # fmt: skip
        os.close(events_w)
        os.close(control_r)
        launcher.wait(timeout=30)  # it forks the agent and exits at once
        with (
            os.fdopen(events_r, "r", encoding="utf-8") as events,
            os.fdopen(control_w, "w", encoding="utf-8") as control,
        ):
            self._follow(events, control)

    def _follow(self, events: TextIO, control: TextIO) -> None:
        story = self.story
        answered = False
        lines = _Lines(events)
        while True:
            line = lines.next(timeout=180)
            if not line:
                raise DemoFailed("the demo agent stopped without finishing; see agent.stderr")
            event = json.loads(line)
            kind = event.get("event")
            if kind == "step":
                story.step(str(event["title"]))
            elif kind == "note":
                story.note(str(event["text"]))
                if not answered and "proposing" in str(event["text"]):
                    self._answer_one_card()
                    answered = True
            elif kind == "check":
                story.expect(bool(event["ok"]), str(event["text"]))
            elif kind == "need" and event.get("what") == "lock":
                self._sp("vault", "lock")
                story.ok("a human locked the vault (`sp vault lock`)")
                control.write("done\n")
                control.flush()
            elif kind == "seen":
                story.seen.extend(str(answer) for answer in event["answers"])
                return
            elif kind == "crash":
                raise DemoFailed(f"the demo agent failed: {event.get('text')}")

    def _answer_one_card(self) -> None:
        deadline = time.monotonic() + 60
        cards: list[dict[str, Any]] = []
        while not cards:
            if time.monotonic() > deadline:
                raise DemoFailed("no approval card appeared within 60 s")
            time.sleep(0.2)
            cards = json.loads(self._sp("approvals", "list", "--json").stdout or "[]")
        card = cards[0]
        shown = self._sp("approvals", "list")
        self.story.console.out(shown.stdout.rstrip("\n"), highlight=False)
        approve = True if self.ask is None else self.ask(card)
        verb = "approve" if approve else "deny"
        answered = self._sp(
            "approvals", verb, str(card["id"]), "--passphrase-file", str(self.passphrase_file),
            check=False,
        )  # fmt: skip
        if answered.returncode != 0:
            # Answered after the card expired (or it was withdrawn): a sentence, not a trace.
            self.story.expect(
                False,
                f"the answer came too late: {answered.stderr.strip()[:200]} "
                f"(the card waits {card.get('timeout_s', '?')} s; run the demo again)",
            )
            return
        self.story.ok(f"a human answered the card from another process tree: {verb}")

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
            sp_command(args),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise DemoFailed(f"`sp {' '.join(args[:3])}` failed: {done.stderr.strip()[:400]}")
        return done


class _Lines:
    """The agent's lines, read on a thread so that a silent agent cannot hang the demo."""

    def __init__(self, stream: TextIO) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: TextIO) -> None:
        # The demo closes the pipe when it stops early (a late answer, a failed check): the
        # read then fails with ValueError, which is the end of the agent's lines, not a crash.
        with contextlib.suppress(ValueError, OSError):
            for line in stream:
                self._queue.put(line)
        self._queue.put("")

    def next(self, timeout: float) -> str:
        """The next line, or "" when the agent closed the pipe or was silent for ``timeout``."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return ""
