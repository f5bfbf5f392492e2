"""What the clients' own CLIs answer, read back into an entry (pure parsing; the real CLIs are
driven in tests/context_server/mcp_clients/test_real_clients_git.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from safeport.context_server.mcp_clients.client_cli import (
    as_entry,
    client_program,
    parse_claude_get,
    parse_codex_get,
    trusted_path,
)
from safeport.context_server.mcp_clients.install import Setup, entry_differences
from safeport.context_server.mcp_clients.project_keys import claude_code_project
from safeport.context_server.mcp_clients.verify import verify

WANTED = {
    "type": "stdio",
    "command": "/opt/sp/bin/python3",
    "args": ["-I", "-m", "safeport", "context", "serve", "--root", "/home/me/my app"],
    "env": {"SAFEPORT_HOME": "/home/me/.sp"},
}

CLAUDE_OK = """safeport:
  Scope: Local config (private to you in this project)
  Status: ✔ Connected
  Type: stdio
  Command: /opt/sp/bin/python3
  Args: -I -m safeport context serve --root /home/me/my app
  Environment:
    SAFEPORT_HOME=/home/me/.sp

To remove this server, run: claude mcp remove safeport -s local
"""


def test_claude_codes_report_reads_back_as_the_entry_it_shows() -> None:
    answer = parse_claude_get("claude mcp get safeport", 0, CLAUDE_OK, "")
    assert answer.entry is not None and answer.scope == "local"
    assert answer.status == "✔ Connected"
    # Args are printed joined by spaces; a root with a space still compares equal.
    assert entry_differences(as_entry(answer.entry, WANTED), WANTED) == []


def test_a_different_root_or_home_in_claude_codes_report_is_named() -> None:
    other = CLAUDE_OK.replace("my app", "elsewhere").replace("/home/me/.sp", "/tmp/x")
    answer = parse_claude_get("claude mcp get safeport", 0, other, "")
    assert answer.entry is not None
    problems = entry_differences(as_entry(answer.entry, WANTED), WANTED)
    assert any(p.startswith("roots:") for p in problems)
    assert any(p.startswith("SAFEPORT_HOME:") for p in problems)


def test_claude_code_without_the_server_or_failing_is_told_apart() -> None:
    missing = parse_claude_get(
        "claude mcp get safeport", 1, "", 'No MCP server named "safeport". Configured servers: x'
    )
    assert missing.entry is None and missing.error is None and missing.issue
    broken = parse_claude_get("claude mcp get safeport", 2, "", "segmentation fault")
    assert broken.error == "segmentation fault"
    garbled = parse_claude_get("claude mcp get safeport", 0, "hello\n", "")
    assert garbled.error is not None  # read the file back rather than trust it


def test_codexs_json_reads_back_as_the_entry_and_a_disabled_one_says_so() -> None:
    server = {
        "name": "safeport",
        "enabled": False,
        "transport": {"type": "stdio", "command": WANTED["command"], "args": WANTED["args"],
                      "env": WANTED["env"]},
    }  # fmt: skip
    answer = parse_codex_get("codex mcp get safeport --json", 0, json.dumps(server), "")
    assert answer.entry is not None and answer.issue == "disabled in Codex's configuration"
    wanted = {k: v for k, v in WANTED.items() if k != "type"}
    assert entry_differences(as_entry(answer.entry, wanted), wanted) == []
    missing = parse_codex_get("x", 1, "", "Error: No MCP server named 'safeport' found.\n")
    assert missing.entry is None and missing.error is None
    assert parse_codex_get("x", 0, "[]", "").error is not None


def test_only_absolute_path_folders_are_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a relative entry would find the planted one
    (tmp_path / "sub").mkdir()
    program = tmp_path / "claude"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert client_program("claude-code", {"PATH": str(tmp_path)}) == program
    for relative in (".", "", "./", "sub/.."):
        assert client_program("claude-code", {"PATH": relative}) is None
    assert client_program("cursor", {"PATH": str(tmp_path)}) is None  # no CLI to ask


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_cli_inside_a_served_folder_is_never_found(tmp_path: Path) -> None:
    project, tools = tmp_path / "project", tmp_path / "tools"
    for planted in (project / ".venv" / "bin", project / "node_modules" / ".bin"):
        _executable(planted / "claude", "#!/bin/sh\n")
    real = _executable(tools / "claude", "#!/bin/sh\n")
    _executable(tools / "linked" / "claude", "#!/bin/sh\n").unlink()
    (tools / "linked" / "claude").symlink_to(project / ".venv" / "bin" / "claude")
    path = os.pathsep.join(
        [
            str(project / ".venv" / "bin"),
            str(project / "node_modules" / ".bin"),
            str(tools / "linked"),
            str(tools),
        ]
    )
    assert client_program("claude-code", {"PATH": path}, [project]) == real
    assert trusted_path({"PATH": f":.:{path}"}, [project]) == os.pathsep.join(
        [str(tools / "linked"), str(tools)]
    )


def test_the_cli_runs_with_no_folder_an_agent_could_write_on_its_path(tmp_path: Path) -> None:
    # codex starts with `#!/usr/bin/env node`: env looks its interpreter up on the PATH given.
    project, tools, marker = tmp_path / "project", tmp_path / "tools", tmp_path / "planted-ran"
    _executable(project / "node", f"#!/bin/sh\ntouch {marker}\n")
    _executable(project / "bin" / "node", f"#!/bin/sh\ntouch {marker}\n")
    _executable(tools / "codex", "#!/usr/bin/env node\n")
    env = {"PATH": os.pathsep.join(["", ".", str(project / "bin"), str(tools), "/usr/bin", "/bin"])}
    setup = Setup("codex", (project,), profile="reader", env=env, home=tmp_path / "home")
    verdict = verify(setup)
    assert not marker.exists()
    assert verdict.problems  # whatever the tool said, nothing planted ran


def test_codex_settings_merged_from_the_project_are_differences() -> None:
    wanted = {"command": "/usr/bin/python3", "args": ["-I", "-m", "safeport"]}
    answer = parse_codex_get(
        "codex mcp get safeport --json",
        0,
        json.dumps(
            {
                "name": "safeport",
                "enabled": True,
                "disabled_tools": ["read_file"],
                "transport": {**wanted, "type": "stdio", "env": None, "cwd": "/tmp/elsewhere"},
            }
        ),
        "",
    )
    assert answer.entry is not None and answer.entry["cwd"] == "/tmp/elsewhere"
    assert as_entry(answer.entry, wanted) != wanted
    assert answer.issue is not None and "disabled_tools" in answer.issue


def test_a_fifo_where_git_keeps_a_pointer_never_hangs_the_lookup(tmp_path: Path) -> None:
    project, fake = tmp_path / "proj", tmp_path / "fake" / ".git" / "worktrees" / "x"
    project.mkdir()
    fake.mkdir(parents=True)
    (project / ".git").write_text(f"gitdir: {fake}\n")
    os.mkfifo(fake / "commondir")
    os.mkfifo(fake / "gitdir")
    started = time.monotonic()
    assert claude_code_project(project) == project  # as for any pointer it cannot read
    assert time.monotonic() - started < 5
