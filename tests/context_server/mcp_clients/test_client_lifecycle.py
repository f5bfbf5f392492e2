"""The five clients round-trip install, list, check and uninstall in a private HOME; entries
carry the location settings; VS Code's JSONC keeps its comments; Claude Code has three scopes."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest

from safeport.context_server.mcp_clients.config_files import ENTRY_NAME
from safeport.context_server.mcp_clients.install import entry_differences
from safeport.shared import jsonc
from tests.context_server.mcp_clients.test_client_install import sp

VSCODE_JSONC = """{
  // servers for this workspace
  "servers": {
    "other": {"type": "stdio", "command": "x"}, // keep this comment
  },
  /* inputs are VS Code's own */
  "inputs": [],
}
"""


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


def places(home: Path, workspace: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    root = str(workspace.resolve())
    return {
        "claude-code:local": (home / ".claude.json", ("projects", root, "mcpServers")),
        "claude-code:project": (workspace / ".mcp.json", ("mcpServers",)),
        "claude-code:user": (home / ".claude.json", ("mcpServers",)),
        "claude-desktop": (
            home / ".config" / "Claude" / "claude_desktop_config.json",
            ("mcpServers",),
        ),
        "codex": (home / ".codex" / "config.toml", ("mcp_servers",)),
        "cursor": (home / ".cursor" / "mcp.json", ("mcpServers",)),
        "vscode": (workspace / ".vscode" / "mcp.json", ("servers",)),
    }


def read_entry(path: Path, key: tuple[str, ...]) -> dict[str, Any] | None:
    if not path.exists():
        return None
    text = path.read_text()
    node: Any = tomllib.loads(text) if ".toml" in path.name else jsonc.loads(text)
    for name in (*key, ENTRY_NAME):
        if not isinstance(node, dict) or name not in node:
            return None
        node = node[name]
    assert isinstance(node, dict)
    return node


@pytest.mark.parametrize(
    "place",
    ["claude-code:local", "claude-code:project", "claude-code:user", "claude-desktop", "codex",
     "cursor", "vscode"],
)  # fmt: skip
def test_each_client_round_trips_install_list_check_uninstall(
    home: Path, workspace: Path, place: str
) -> None:
    client, _, scope = place.partition(":")
    scoped = ["--scope", scope] if scope else []
    path, key = places(home, workspace)[place]
    if client == "vscode":
        path.parent.mkdir()
        path.write_text(VSCODE_JSONC)
    sp_home = home / "sp-home"
    where = {"SAFEPORT_HOME": str(sp_home), "SAFEPORT_GATEWAY": "/etc/safeport/gateway.json"}
    args = [client, "--root", str(workspace), "--profile", "agent", *scoped]
    done = sp(home, *args, cwd=workspace, **where)
    assert done.returncode == 0, done.stderr
    entry = read_entry(path, key)
    assert entry is not None, path.read_text()
    assert entry["env"] == where  # the server finds the same home and gateway as `sp`
    if client == "vscode":
        text = path.read_text()
        assert "// servers for this workspace" in text and "// keep this comment" in text
        assert "/* inputs are VS Code's own */" in text
        assert jsonc.loads(text)["servers"]["other"] == {"type": "stdio", "command": "x"}

    listed = sp(home, "--root", str(workspace), cwd=workspace, command="list", **where)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if str(path) in line and "OK" in line)
    assert line.startswith(f"{client} ({scope})" if scope else client)
    assert f"home {sp_home}" in listed.stdout and "profile agent" in listed.stdout
    assert "\\u000a" not in listed.stdout  # one line per line, not escaped newlines

    check = [*args, "--check"]
    assert sp(home, *check, cwd=workspace, **where).returncode == 0
    moved = sp(home, *check, cwd=workspace, SAFEPORT_HOME=str(home / "other"))
    assert moved.returncode == 1
    assert f"SAFEPORT_HOME: {sp_home} in the entry, {home / 'other'} for this `sp`" in moved.stderr
    assert "SAFEPORT_GATEWAY: /etc/safeport/gateway.json in the entry, not set" in moved.stderr
    reader = sp(home, client, "--root", str(workspace), *scoped, "--check", cwd=workspace, **where)
    assert reader.returncode == 1 and "profile: agent, not reader" in reader.stderr

    removed = sp(
        home, client, "--root", str(workspace), *scoped, cwd=workspace, command="uninstall"
    )
    assert removed.returncode == 0, removed.stderr
    assert read_entry(path, key) is None
    # The file before is kept in safeport's private folder, never in the project or beside
    # the client's file (it holds this machine's paths and any other server's settings).
    assert list(workspace.rglob("*.bak")) == [] and list(path.parent.glob("*.bak")) == []
    kept = home / ".local" / "share" / "safeport" / "client-backups"
    backups = list(kept.glob(f"{client}.{path.name}.*.bak"))
    assert len(backups) == 1 and read_entry(backups[0], key) == entry
    assert kept.stat().st_mode & 0o777 == 0o700 and backups[0].stat().st_mode & 0o777 == 0o600
    if client == "vscode":
        assert path.read_text() == VSCODE_JSONC  # the person's file, byte for byte
    gone = sp(home, *check, cwd=workspace, **where)
    assert gone.returncode == 1 and f"no `{ENTRY_NAME}` entry in {path}" in gone.stderr
    listed = sp(home, "--root", str(workspace), cwd=workspace, command="list")
    assert any(str(path) in ln and "not installed" in ln for ln in listed.stdout.splitlines())
    again = sp(home, client, "--root", str(workspace), *scoped, cwd=workspace, command="uninstall")
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_without_location_settings_the_entry_carries_none(home: Path, workspace: Path) -> None:
    assert sp(home, "cursor", "--root", str(workspace)).returncode == 0
    entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"][ENTRY_NAME]
    assert "env" not in entry
    assert sp(home, "codex", "--root", str(workspace)).returncode == 0
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert "env" not in codex["mcp_servers"][ENTRY_NAME]


def test_a_relative_safeport_home_is_written_absolute(home: Path, workspace: Path) -> None:
    done = sp(home, "cursor", "--root", str(workspace), cwd=workspace, SAFEPORT_HOME="sp")
    assert done.returncode == 0, done.stderr
    entry = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"][ENTRY_NAME]
    assert entry["env"] == {"SAFEPORT_HOME": os.path.join(workspace.resolve(), "sp")}


def test_claude_code_project_scope_warns_that_the_file_is_shared(
    home: Path, workspace: Path
) -> None:
    done = sp(home, "claude-code", "--root", str(workspace), "--scope", "project")
    assert done.returncode == 0 and "meant to be committed" in done.stderr
    assert ENTRY_NAME in json.loads((workspace / ".mcp.json").read_text())["mcpServers"]
    assert not (home / ".claude.json").exists()
    local = sp(home, "claude-code", "--root", str(workspace))
    assert local.returncode == 0 and "meant to be committed" not in local.stderr


def test_a_broken_jsonc_file_is_refused_with_line_and_column(home: Path, workspace: Path) -> None:
    path = workspace / ".vscode" / "mcp.json"
    path.parent.mkdir()
    broken = '{\n  // fine so far\n  "servers": {\n    "a": 1\n    "b": 2\n  }\n}\n'
    path.write_text(broken)
    for command in ("install", "uninstall"):
        done = sp(home, "vscode", "--root", str(workspace), command=command)
        assert done.returncode == 2, done.stdout
        assert "line 5, column 5" in done.stderr, done.stderr
    printed = sp(home, "vscode", "--root", str(workspace), "--print")
    assert printed.returncode == 0 and ENTRY_NAME in json.loads(printed.stdout)
    assert path.read_text() == broken


def test_differences_are_named_one_by_one() -> None:
    wanted = {"command": "/venv/bin/python", "args": ["-I", "-m", "safeport", "context", "serve",
              "--profile", "agent", "--origin", "cursor", "--root", "/a"]}  # fmt: skip
    found = {"command": "/old/bin/python", "args": ["-m", "safeport", "context", "serve",
             "--profile", "reader", "--origin", "cursor", "--root", "/b"]}  # fmt: skip
    problems = entry_differences(found, wanted)
    assert any("without -I" in p for p in problems)
    assert "interpreter: /old/bin/python, not this safeport's /venv/bin/python" in problems
    assert "profile: reader, not agent" in problems and "roots: /b, not /a" in problems
    assert entry_differences(wanted, dict(wanted)) == []
    assert entry_differences({**wanted, "timeout": 5}, wanted) == ["other settings differ: timeout"]
