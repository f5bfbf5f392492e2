"""The parts of a guide walk: a guide's `sh` lines, a shell that runs them as a new user's would,
a watcher on a background `sp approvals watch`, and an agent that calls the context server the
way a client starts it."""

from __future__ import annotations

import io
import json
import queue
import re
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.gateway import REPO
from safeport.shared.launch import sp_command

GUIDES = REPO / "docs" / "guides"
_FENCE = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
_COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class Line:
    guide: str
    command: str
    """The command as written, its trailing comment removed."""
    comment: str


def guide_lines(name: str) -> list[Line]:
    """Every command of the guide's `sh` blocks, in order (a `\\` continuation joined)."""
    text = (GUIDES / name).read_text(encoding="utf-8")
    lines: list[Line] = []
    for block in _FENCE.findall(text):
        for raw in block.replace("\\\n", " ").splitlines():
            if not raw.strip():
                continue
            comment = _COMMENT.search(raw)
            command = raw[: comment.start()] if comment else raw
            lines.append(Line(name, command.strip(), comment.group(0).strip() if comment else ""))
    return lines


def toml_block(name: str) -> str:
    """The guide's only `toml` block: the policy text it tells the reader to write."""
    blocks = re.findall(r"^```toml\n(.*?)^```", (GUIDES / name).read_text(), re.M | re.S)
    assert len(blocks) == 1, f"{name}: expected one toml block, found {len(blocks)}"
    return str(blocks[0])


class World:
    """What a new user has before the first command: a HOME of their own, `sp` on PATH, an
    editor, a password manager, an SSH key the servers accept, and a git repository."""

    def __init__(self, root: Path, secrets: dict[str, str], client_key: Path) -> None:
        self.home = root / "home"
        self.bin = root / "bin"
        for folder in (self.home, self.bin, self.home / ".ssh"):
            folder.mkdir(mode=0o700, parents=True)
        self.repo = self.home / "src" / "monorepo"
        self.folder = self.repo / "pkg"
        self.folder.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.repo)], check=True, timeout=30)
        (self.folder / "README.md").write_text("The package a monorepo user works in.\n")
        self.policy_text = self.home / ".policy-text.toml"
        _script(self.bin / "sp", f'exec {shlex.join(sp_command([]))} "$@"')
        # `pass show NAME` prints a secret, as the password manager the guide names does.
        cases = "".join(f"  {name}) printf '%s\\n' {shlex.quote(value)} ;;\n"
                        for name, value in secrets.items())  # fmt: skip
        _script(self.bin / "pass", f'case "$2" in\n{cases}  *) exit 1 ;;\nesac')
        # The editor appends the policy text the guide shows, as the reader types it.
        _script(self.bin / "editor", f'cat {shlex.quote(str(self.policy_text))} >> "$1"')
        passphrase = self.home / ".safeport-pass"
        passphrase.write_text(secrets["safeport"] + "\n")
        passphrase.chmod(0o600)
        for key in ("gateway_ed25519", "web_ed25519"):
            shutil.copyfile(client_key, self.home / ".ssh" / key)
            (self.home / ".ssh" / key).chmod(0o600)

    def env(self) -> dict[str, str]:
        node = Path(shutil.which("node") or "/usr/bin/node").parent
        return {
            "PATH": f"{self.bin}:{REPO / 'node_modules' / '.bin'}:{node}:/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "EDITOR": str(self.bin / "editor"),
            "COLUMNS": "100",
            # Offline: no update checks or telemetry from the clients.
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
        }

    def shell(self, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=self.env(),
            stdin=subprocess.DEVNULL,  # no terminal, as in a script
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def start(self, command: str, cwd: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            env=self.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )


def _script(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


class Watcher:
    """Reads a background `sp approvals watch` without blocking and answers its cards."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.seen = ""

    def until(self, text: str, timeout: float = 30) -> str:
        stdout = self.process.stdout
        assert isinstance(stdout, io.BufferedReader)
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} not shown; got:\n{self.seen}"
            ready, _, _ = select.select([stdout], [], [], left)
            if ready:
                chunk = stdout.read1(4096)
                assert chunk, f"the watch exited; got:\n{self.seen}"
                self.seen += chunk.decode()
        return self.seen

    def answer(self, text: str, grace_s: float) -> None:
        """Answer the card shown, once the watch takes input for it (a key pressed as a card
        appears is ignored, since it was meant for the screen before)."""
        time.sleep(grace_s + 0.2)
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()
        self.seen = ""

    def end_input(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=30)


class Agent:
    """One client process (`python -m tests.cli.guide_agent`): it starts the installed entry's
    command as its client does and calls tools in order; a call waits for its card. A process
    of its own, as a real client is: the approver must not run inside it."""

    def __init__(self, entry: dict[str, Any], env: dict[str, str], cwd: Path) -> None:
        launch = {"command": entry["command"], "args": entry["args"], "cwd": str(cwd),
                  "env": {**env, **entry.get("env", {})}}  # fmt: skip
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.cli.guide_agent", json.dumps(launch)],
            cwd=REPO,
            env={"PATH": env["PATH"], "HOME": env["HOME"], "LANG": "C.UTF-8"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.results: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.results.put(json.loads(line))
        assert self.process.stderr is not None
        self.results.put({"exited": self.process.wait(), "stderr": self.process.stderr.read()})

    def call(self, tool: str, **arguments: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
        self.process.stdin.flush()

    def result(self, timeout: float = 60) -> tuple[str, bool]:
        """The text of the next call's result and whether it is an error."""
        try:
            got = self.results.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no result within {timeout} s") from None
        assert "text" in got, f"the client process failed: {got}"
        return str(got["text"]), bool(got["error"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s")
