"""What the clients' own CLIs answer, read back into an entry (pure parsing; the real CLIs are
driven in tests/cli/test_real_clients_git.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safeport.context_server.mcp_clients.client_cli import (
    as_entry,
    client_program,
    parse_claude_get,
    parse_codex_get,
)
from safeport.context_server.mcp_clients.install import entry_differences

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
