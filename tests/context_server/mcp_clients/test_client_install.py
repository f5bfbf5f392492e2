"""`sp client install` merges one entry into each client's config and never clobbers a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from safeport.context_server.mcp_clients.config_files import ENTRY_NAME
from safeport.shared.launch import sp_command
from safeport.shared.paths import LOCATION_VARIABLES


def sp(
    home: Path, *args: str, cwd: Path | None = None, command: str = "install", **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), **extra}
    for moved in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", *LOCATION_VARIABLES):
        if moved not in extra:
            env.pop(moved, None)
    return subprocess.run(
        sp_command(["client", command, *args]),
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
    assert entry["args"][:5] == ["-I", "-m", "safeport", "context", "serve"]
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


def test_claude_code_gets_a_local_scope_entry_for_the_served_root(
    home: Path, workspace: Path
) -> None:
    (home / ".claude.json").write_text(json.dumps({"userID": "u", "projects": {"/x": {}}}))
    assert sp(home, "claude-code", "--root", str(workspace)).returncode == 0
    config = json.loads((home / ".claude.json").read_text())
    assert config["userID"] == "u" and config["projects"]["/x"] == {}
    entry = config["projects"][str(workspace.resolve())]["mcpServers"][ENTRY_NAME]
    assert entry["type"] == "stdio" and entry["env"] == {}
    assert entry["args"][:3] == ["-I", "-m", "safeport"]
    assert not (workspace / ".mcp.json").exists()  # nothing a teammate would pick up
    assert sp(home, "claude-code", "--root", str(workspace), "--check").returncode == 0


def test_project_scoped_clients_write_into_the_served_root(home: Path, workspace: Path) -> None:
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


def test_print_prints_the_entry_alone_and_changes_nothing(home: Path, workspace: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}')
    done = sp(home, "cursor", "--root", str(workspace), "--print")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert list(printed) == [ENTRY_NAME] and printed[ENTRY_NAME]["command"] == sys.executable
    assert str(path) in done.stderr
    assert path.read_text() == '{"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}'
    codex = sp(home, "codex", "--root", str(workspace), "--print")
    assert tomllib.loads(codex.stdout)["mcp_servers"][ENTRY_NAME]["command"] == sys.executable
    assert not (home / ".codex").exists()


def older_entry(workspace: Path) -> dict[str, object]:
    """What an older version wrote: `python -m safeport`, which imports from the project."""
    return {
        "command": sys.executable,
        "args": ["-m", "safeport", "context", "serve", "--root", str(workspace)],
    }


def test_an_older_entry_that_imports_project_code_is_flagged_then_rewritten(
    home: Path, workspace: Path
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"mcpServers": {ENTRY_NAME: older_entry(workspace), "o": {}}}))
    flagged = sp(home, "cursor", "--root", str(workspace), "--check")
    assert flagged.returncode == 1
    assert "imports code from the project folder" in flagged.stderr
    assert str(path) in flagged.stderr
    done = sp(home, "cursor", "--root", str(workspace))  # no --replace needed
    assert done.returncode == 0, done.stderr
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers[ENTRY_NAME]["args"][0] == "-I" and servers["o"] == {}
    assert sp(home, "cursor", "--root", str(workspace), "--check").returncode == 0


def test_an_older_codex_entry_is_rewritten_in_place(home: Path, workspace: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    old = older_entry(workspace)
    path.write_text(
        f"[mcp_servers.{ENTRY_NAME}]\ncommand = {json.dumps(old['command'])}\n"
        f'args = {json.dumps(old["args"])}\n\n[mcp_servers.other]\ncommand = "x"\n'
    )
    assert sp(home, "codex", "--root", str(workspace), "--check").returncode == 1
    assert sp(home, "codex", "--root", str(workspace)).returncode == 0
    parsed = tomllib.loads(path.read_text())
    assert parsed["mcp_servers"][ENTRY_NAME]["args"][:3] == ["-I", "-m", "safeport"]
    assert parsed["mcp_servers"]["other"]["command"] == "x"


def test_an_older_project_file_entry_for_claude_code_is_removed(
    home: Path, workspace: Path
) -> None:
    legacy = workspace / ".mcp.json"
    legacy.write_text(
        json.dumps({"mcpServers": {ENTRY_NAME: older_entry(workspace), "team": {"command": "t"}}})
    )
    assert sp(home, "claude-code", "--root", str(workspace)).returncode == 0
    flagged = sp(home, "claude-code", "--root", str(workspace), "--check")
    assert flagged.returncode == 0, flagged.stderr
    assert json.loads(legacy.read_text())["mcpServers"] == {"team": {"command": "t"}}


def test_a_legacy_project_entry_is_flagged_by_check(home: Path, workspace: Path) -> None:
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {ENTRY_NAME: older_entry(workspace)}})
    )
    assert sp(home, "claude-code", "--root", str(workspace)).returncode == 0
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {ENTRY_NAME: older_entry(workspace)}})
    )
    flagged = sp(home, "claude-code", "--root", str(workspace), "--check")
    assert flagged.returncode == 1 and ".mcp.json" in flagged.stderr


def test_the_clients_own_config_folder_variables_are_honoured(home: Path, workspace: Path) -> None:
    moved = home / "elsewhere"
    assert (
        sp(home, "claude-code", "--root", str(workspace), CLAUDE_CONFIG_DIR=str(moved)).returncode
        == 0
    )
    config = json.loads((moved / ".claude.json").read_text())
    assert ENTRY_NAME in config["projects"][str(workspace.resolve())]["mcpServers"]
    assert sp(home, "codex", "--root", str(workspace), CODEX_HOME=str(moved)).returncode == 0
    assert ENTRY_NAME in tomllib.loads((moved / "config.toml").read_text())["mcp_servers"]
    assert not (home / ".claude.json").exists() and not (home / ".codex").exists()


def test_a_project_codex_file_with_an_unsafe_entry_is_flagged_and_cleaned(
    home: Path, workspace: Path
) -> None:
    shipped = workspace / ".codex" / "config.toml"
    shipped.parent.mkdir()
    old = older_entry(workspace)
    shipped.write_text(
        'model = "x"\n\n'
        f"[mcp_servers.{ENTRY_NAME}]\ncommand = {json.dumps(old['command'])}\n"
        f'args = {json.dumps(old["args"])}\n\n[mcp_servers.{ENTRY_NAME}.env]\nA = "1"\n'
    )
    assert sp(home, "codex", "--root", str(workspace)).returncode == 0
    flagged = sp(home, "codex", "--root", str(workspace), "--check")
    assert flagged.returncode == 0, flagged.stderr
    parsed = tomllib.loads(shipped.read_text())
    assert parsed == {"model": "x", "mcp_servers": {}} or parsed == {"model": "x"}


def test_an_unusual_toml_entry_is_refused_rather_than_corrupted(
    home: Path, workspace: Path
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    old = older_entry(workspace)
    text = (
        f"[mcp_servers.{ENTRY_NAME}]\ncommand = {json.dumps(old['command'])}\n"
        f"args = {json.dumps(old['args'])}\nnote = '''\n[written by 0.0.9]\n'''\n"
        "startup_timeout_sec = 20\n\n[other]\nkeep = true\n"
    )
    path.write_text(text)
    done = sp(home, "codex", "--root", str(workspace))
    assert done.returncode == 2 and "by hand" in done.stderr
    assert path.read_text() == text  # never half-written


def test_a_symlinked_config_file_is_updated_where_it_points(home: Path, workspace: Path) -> None:
    dotfiles = home / "dotfiles" / "mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"mcpServers": {"o": {"command": "x"}}}))
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").symlink_to(dotfiles)
    assert sp(home, "cursor", "--root", str(workspace)).returncode == 0
    assert (home / ".cursor" / "mcp.json").is_symlink()
    assert ENTRY_NAME in json.loads(dotfiles.read_text())["mcpServers"]


def test_a_served_folder_that_holds_the_interpreter_is_refused(home: Path) -> None:
    """A .pth file the agent drops in a venv inside the project would run in every process."""
    done = sp(home, "cursor", "--root", sys.prefix)
    assert done.returncode == 2 and "the agent could change" in done.stderr
    assert not (home / ".cursor").exists()


def test_a_codex_entry_whose_comment_holds_a_line_separator_is_replaced_as_toml_reads_it(
    home: Path, workspace: Path
) -> None:
    """TOML reads `# note<U+2028>[keep.me]` as one comment, so the key after it is still ours;
    split at U+2028, the edit would have made `[keep.me]` a real table (and been refused)."""
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    old = older_entry(workspace)
    path.write_text(
        f"[mcp_servers.{ENTRY_NAME}]\ncommand = {json.dumps(old['command'])}\n"
        f"args = {json.dumps(old['args'])}\n# note\u2028[keep.me]\nstartup_timeout_sec = 20\n\n"
        '[mcp_servers.other]\ncommand = "x"\n'
    )
    done = sp(home, "codex", "--root", str(workspace))
    assert done.returncode == 0, done.stderr
    parsed = tomllib.loads(path.read_text())
    assert parsed["mcp_servers"][ENTRY_NAME]["args"][:3] == ["-I", "-m", "safeport"]
    assert parsed["mcp_servers"]["other"] == {"command": "x"} and "keep" not in parsed
