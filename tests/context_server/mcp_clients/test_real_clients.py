"""The real Claude Code and Codex CLIs (npm, pinned in package.json) read what `sp client
install` writes and start it, offline, from a project folder that holds hostile code."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from safeport.context_server.mcp_clients.config_files import ENTRY_NAME, server_command
from safeport.shared.launch import sp_command
from tests.conftest import need
from tests.hostile_folder import HostileFolder
from tests.test_own_code_only import list_tools

REPO = Path(__file__).resolve().parents[3]
CLAUDE = REPO / "node_modules" / ".bin" / "claude"
CODEX = REPO / "node_modules" / ".bin" / "codex"

pytestmark = pytest.mark.integration


def user_env(home: Path, hostile: HostileFolder) -> dict[str, str]:
    """The user's shell as the client inherits it, with PYTHONPATH aimed at the project."""
    return {
        "PATH": f"{Path(shutil.which('node') or '/usr/bin/node').parent}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(hostile.root),
        **offline(home),
    }


def offline(home: Path) -> dict[str, str]:
    """No update checks, telemetry or other traffic from the clients; Codex's home in ``home``."""
    return {
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "CODEX_HOME": str(home / ".codex"),
    }


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def safeport_line(listing: str) -> str:
    return next((line for line in listing.splitlines() if line.startswith(f"{ENTRY_NAME}:")), "")


def test_claude_code_connects_to_the_installed_entry_and_runs_no_project_code(
    home: Path, hostile: HostileFolder
) -> None:
    need(CLAUDE.exists(), "Claude Code is not installed (run `npm install`)")
    env = user_env(home, hostile)
    root = str(hostile.root.resolve())
    # An entry an older version wrote: Claude Code starts it in the project folder, and the
    # project's own safeport/ package runs instead of the server.
    older = {"type": "stdio", "command": sys.executable, "args": ["-m", "safeport", "context",
             "serve", "--root", root], "env": {}}  # fmt: skip
    (home / ".claude.json").write_text(
        json.dumps({"projects": {root: {"mcpServers": {ENTRY_NAME: older}}}})
    )
    before = run([str(CLAUDE), "mcp", "list"], env, hostile.root)
    assert "Connected" not in safeport_line(before.stdout), before.stdout
    assert "safeport.main" in hostile.ran()
    for mark in hostile.marks.iterdir():
        mark.unlink()

    flagged = run(sp_command(["client", "install", "claude-code", "--check"]), env, hostile.root)
    assert flagged.returncode == 1 and "imports code from the project folder" in flagged.stderr
    installed = run(sp_command(["client", "install", "claude-code"]), env, hostile.root)
    assert installed.returncode == 0, installed.stderr
    after = run([str(CLAUDE), "mcp", "list"], env, hostile.root)
    assert after.returncode == 0, after.stderr
    assert "✔ Connected" in safeport_line(after.stdout), after.stdout
    assert hostile.ran() == []


def test_codex_lists_the_installed_entry_enabled_and_it_runs_no_project_code(
    home: Path, hostile: HostileFolder
) -> None:
    need(CODEX.exists(), "the Codex CLI is not installed (run `npm install`)")
    env = user_env(home, hostile)
    root = hostile.root.resolve()
    installed = run(sp_command(["client", "install", "codex"]), env, hostile.root)
    assert installed.returncode == 0, installed.stderr
    listed = run([str(CODEX), "mcp", "list", "--json"], env, hostile.root)
    assert listed.returncode == 0, listed.stderr
    servers = {server["name"]: server for server in json.loads(listed.stdout)}
    server = servers[ENTRY_NAME]
    assert server["enabled"] is True
    command, args = server_command(sys.executable, [root], "reader", "codex")
    assert server["transport"]["command"] == command
    assert server["transport"]["args"] == args
    # Start it the way Codex does: its command and args, the user's environment, in the project.
    tools = anyio.run(list_tools, command, args, env, hostile.root)
    assert "read_file" in tools
    assert hostile.ran() == []
