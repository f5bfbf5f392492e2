"""`sp client install` merges one entry into each client's config and never clobbers a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from safeport.cli.client_setup import ENTRY_NAME


def sp(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "safeport", "client", "install", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_cursor_gets_an_entry_that_runs_this_installation(home: Path, workspace: Path) -> None:
    done = sp(home, "cursor", "--root", str(workspace))
    assert done.returncode == 0, done.stderr
    config = json.loads((home / ".cursor" / "mcp.json").read_text())
    entry = config["mcpServers"][ENTRY_NAME]
    assert entry["command"] == sys.executable
    assert entry["args"][:4] == ["-m", "safeport", "context", "serve"]
    assert entry["args"][entry["args"].index("--origin") + 1] == "cursor"
    assert entry["args"][entry["args"].index("--root") + 1] == str(workspace.resolve())
    assert (home / ".cursor" / "mcp.json").stat().st_mode & 0o077 == 0
    assert sp(home, "cursor", "--root", str(workspace), "--check").returncode == 0


def test_other_servers_in_the_file_are_kept(home: Path, workspace: Path) -> None:
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}))
    assert sp(home, "claude-desktop", "--root", str(workspace)).returncode == 0
    config = json.loads(path.read_text())
    assert config["theme"] == "dark" and config["mcpServers"]["other"] == {"command": "x"}
    assert ENTRY_NAME in config["mcpServers"]


def test_a_file_that_does_not_parse_is_never_overwritten(home: Path, workspace: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text("{ this is not json")
    done = sp(home, "cursor", "--root", str(workspace))
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert path.read_text() == "{ this is not json"


def test_a_different_existing_entry_needs_replace(home: Path, workspace: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {ENTRY_NAME: {"command": "/somewhere/else"}}}))
    refused = sp(home, "cursor", "--root", str(workspace))
    assert refused.returncode == 2 and "--replace" in refused.stderr
    assert sp(home, "cursor", "--root", str(workspace), "--check").returncode == 1
    assert sp(home, "cursor", "--root", str(workspace), "--replace").returncode == 0
    assert json.loads(path.read_text())["mcpServers"][ENTRY_NAME]["command"] == sys.executable


def test_project_scoped_clients_write_into_the_served_root(home: Path, workspace: Path) -> None:
    assert sp(home, "claude-code", "--root", str(workspace)).returncode == 0
    assert ENTRY_NAME in json.loads((workspace / ".mcp.json").read_text())["mcpServers"]
    assert sp(home, "vscode", "--root", str(workspace), "--profile", "agent").returncode == 0
    vscode = json.loads((workspace / ".vscode" / "mcp.json").read_text())["servers"][ENTRY_NAME]
    assert vscode["type"] == "stdio" and "agent" in vscode["args"]


def test_codex_toml_is_appended_and_replaced_in_place(home: Path, workspace: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "o4"\n\n[mcp_servers.other]\ncommand = "x"\n')
    assert sp(home, "codex", "--root", str(workspace)).returncode == 0
    parsed = tomllib.loads(path.read_text())
    assert parsed["model"] == "o4" and parsed["mcp_servers"]["other"]["command"] == "x"
    assert parsed["mcp_servers"][ENTRY_NAME]["command"] == sys.executable
    assert sp(home, "codex", "--root", str(workspace), "--profile", "agent").returncode == 2
    assert (
        sp(home, "codex", "--root", str(workspace), "--profile", "agent", "--replace").returncode
        == 0
    )
    parsed = tomllib.loads(path.read_text())
    assert "agent" in parsed["mcp_servers"][ENTRY_NAME]["args"]
    assert parsed["mcp_servers"]["other"]["command"] == "x"


def test_print_changes_nothing(home: Path, workspace: Path) -> None:
    done = sp(home, "cursor", "--root", str(workspace), "--print")
    assert done.returncode == 0 and ENTRY_NAME in done.stdout
    assert not (home / ".cursor").exists()
