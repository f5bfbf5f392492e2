"""Inside a git repository, the real Claude Code CLI finds what `sp client install` writes, and
`--check` asks the real clients rather than reading our own file back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from safeport.context_server.mcp_clients.checks import client_findings
from safeport.context_server.mcp_clients.config_files import ENTRY_NAME, server_command
from safeport.context_server.mcp_clients.project_keys import claude_code_project
from safeport.shared.launch import sp_command
from tests.conftest import need
from tests.context_server.mcp_clients.test_real_clients import offline, run

REPO = Path(__file__).resolve().parents[3]
BIN = REPO / "node_modules" / ".bin"

pytestmark = pytest.mark.integration


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=dev@example.org", "-c", "user.name=dev",
         "-c", "protocol.file.allow=always", *args],
        cwd=cwd, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def client_env(home: Path, *, with_clients: bool) -> dict[str, str]:
    node = Path(shutil.which("node") or "/usr/bin/node").parent
    path = f"{BIN}:{node}:/usr/bin:/bin" if with_clients else f"{node}:/usr/bin:/bin"
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        **offline(home),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    need(shutil.which("git") is not None, "git is not installed")
    top = tmp_path / "repo"
    (top / "pkg" / "deep").mkdir(parents=True)
    git("init", "-q", cwd=top)
    git("commit", "-q", "--allow-empty", "-m", "start", cwd=top)
    return top


def test_claude_code_sees_an_entry_installed_from_a_folder_inside_a_repository(
    home: Path, repo: Path
) -> None:
    need((BIN / "claude").exists(), "Claude Code is not installed (run `npm install`)")
    env = client_env(home, with_clients=False)
    folder = repo / "pkg"
    installed = run(sp_command(["client", "install", "claude-code"]), env, folder)
    assert installed.returncode == 0, installed.stderr
    config = json.loads((home / ".claude.json").read_text())
    assert ENTRY_NAME in config["projects"][str(repo.resolve())]["mcpServers"]
    # From the folder it was installed in, and from one below it, as a user starts Claude Code.
    for where in (folder, folder / "deep"):
        got = run([str(BIN / "claude"), "mcp", "get", ENTRY_NAME], env, where)
        assert got.returncode == 0, got.stdout + got.stderr
        assert "Local config" in got.stdout and "✔ Connected" in got.stdout, got.stdout
        assert f"--root {folder.resolve()}" in got.stdout
    listed = run([str(BIN / "claude"), "mcp", "list"], env, folder)
    line = next(x for x in listed.stdout.splitlines() if x.startswith(f"{ENTRY_NAME}:"))
    assert "✔ Connected" in line, listed.stdout


def test_the_key_is_the_one_claude_code_itself_files_servers_under(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """For each layout, `claude mcp add` names its project folder; ours must be the same."""
    need((BIN / "claude").exists(), "Claude Code is not installed (run `npm install`)")
    env = client_env(home, with_clients=False)
    source = tmp_path / "library"
    source.mkdir()
    git("init", "-q", cwd=source)
    git("commit", "-q", "--allow-empty", "-m", "lib", cwd=source)
    git("submodule", "add", "-q", str(source), "vendored", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "second"), cwd=repo)
    (tmp_path / "second" / "pkg").mkdir()
    (repo / "nested" / "inner").mkdir(parents=True)
    git("init", "-q", cwd=repo / "nested")
    (tmp_path / "plain" / "sub").mkdir(parents=True)
    # A .git file whose pointers do not check out: it is a top-level of its own.
    (tmp_path / "forged" / "x").mkdir(parents=True)
    (tmp_path / "forged" / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    folders = [
        *(repo / "pkg" / "deep", repo / "vendored", tmp_path / "second" / "pkg"),
        *(repo / "nested" / "inner", tmp_path / "plain" / "sub", tmp_path / "forged" / "x"),
    ]
    for number, folder in enumerate(folders):
        add = [str(BIN / "claude"), "mcp", "add", f"s{number}", "--", "/bin/true"]
        added = run(add, env, folder)
        assert added.returncode == 0, added.stderr
    projects = json.loads((home / ".claude.json").read_text())["projects"]
    for number, folder in enumerate(folders):
        theirs = next(key for key, value in projects.items() if f"s{number}" in value["mcpServers"])
        assert str(claude_code_project(folder.resolve())) == theirs, folder


def test_check_asks_claude_code_and_finds_an_entry_filed_where_it_never_looks(
    home: Path, repo: Path
) -> None:
    need((BIN / "claude").exists(), "Claude Code is not installed (run `npm install`)")
    folder = (repo / "pkg").resolve()
    # What an older version wrote: the right entry, filed under the served folder itself.
    command, args = server_command(sys.executable, [folder], "reader", "claude-code")
    entry = {"type": "stdio", "command": command, "args": args, "env": {}}
    (home / ".claude.json").write_text(
        json.dumps({"projects": {str(folder): {"mcpServers": {ENTRY_NAME: entry}}}})
    )
    asked = run(
        sp_command(["client", "install", "claude-code", "--check"]),
        client_env(home, with_clients=True),
        folder,
    )
    assert asked.returncode == 1
    assert "asked `claude mcp get safeport`" in asked.stderr, asked.stderr
    assert "Claude Code has no `safeport` server when started in" in asked.stderr
    read = run(
        sp_command(["client", "install", "claude-code", "--check"]),
        client_env(home, with_clients=False),
        folder,
    )
    assert read.returncode == 1 and "(claude is not on PATH)" in read.stderr, read.stderr
    assert "which Claude Code never reads there" in read.stderr
    # An install moves it to where Claude Code looks, and the client then agrees.
    env = client_env(home, with_clients=True)
    assert run(sp_command(["client", "install", "claude-code"]), env, folder).returncode == 0
    projects = json.loads((home / ".claude.json").read_text())["projects"]
    assert ENTRY_NAME not in projects[str(folder)]["mcpServers"]
    assert projects[str(repo.resolve())]["mcpServers"][ENTRY_NAME] == entry
    again = run(sp_command(["client", "install", "claude-code", "--check"]), env, folder)
    assert again.returncode == 0, again.stderr
    assert "asked `claude mcp get safeport`" in again.stdout
    listed = run(sp_command(["client", "list", "--check"]), env, folder)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "claude-code            OK             asked `claude mcp get safeport`" in listed.stdout


def test_check_asks_codex_and_names_what_it_would_run_differently(home: Path, repo: Path) -> None:
    need((BIN / "codex").exists(), "the Codex CLI is not installed (run `npm install`)")
    env = client_env(home, with_clients=True)
    folder = repo / "pkg"
    assert run(sp_command(["client", "install", "codex"]), env, folder).returncode == 0
    ok = run(sp_command(["client", "install", "codex", "--check"]), env, folder)
    assert ok.returncode == 0, ok.stderr
    assert "asked `codex mcp get safeport --json`" in ok.stdout
    config = home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace('"reader"', '"agent"'))
    differs = run(sp_command(["client", "install", "codex", "--check"]), env, folder)
    assert differs.returncode == 1
    assert "profile: agent, not reader" in differs.stderr
    assert "asked `codex mcp get safeport --json`" in differs.stderr


def test_doctor_says_whether_it_asked_the_client_or_read_its_file(home: Path, repo: Path) -> None:
    need((BIN / "claude").exists(), "Claude Code is not installed (run `npm install`)")
    folder = repo / "pkg"
    env = client_env(home, with_clients=False)
    assert run(sp_command(["client", "install", "claude-code"]), env, folder).returncode == 0
    where: dict[str, Any] = {"home": home, "platform": "linux"}
    (asked,) = client_findings(folder.resolve(), env=client_env(home, with_clients=True), **where)
    assert asked.state == "ok" and "asked `claude mcp get safeport`" in asked.detail
    (read,) = client_findings(folder.resolve(), env=env, **where)
    assert read.state == "ok" and "(claude is not on PATH)" in read.detail


def test_a_claude_in_the_project_is_never_run_through_a_relative_path_entry(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    folder = repo / "pkg"
    mark = tmp_path / "ran"
    for name in ("claude", "codex"):
        planted = folder / name
        planted.write_text(f"#!/bin/sh\ntouch {mark}\n")
        planted.chmod(0o755)
    for relative in (".", "", "pkg", "./"):
        env = {**client_env(home, with_clients=False)}
        env["PATH"] = os.pathsep.join([relative, env["PATH"]])
        for client in ("claude-code", "codex"):
            done = run(sp_command(["client", "install", client, "--check"]), env, folder)
            assert "is not on PATH" in done.stderr, done.stderr
    assert not mark.exists()


def test_uninstall_also_removes_an_entry_filed_under_the_subfolder(home: Path, repo: Path) -> None:
    folder = (repo / "pkg").resolve()
    command, args = server_command(sys.executable, [folder], "reader", "claude-code")
    entry = {"type": "stdio", "command": command, "args": args, "env": {}}
    other = {"command": "/bin/true"}
    (home / ".claude.json").write_text(json.dumps({"projects": {
        str(folder): {"mcpServers": {ENTRY_NAME: entry, "other": other}},
        str(repo.resolve()): {"mcpServers": {ENTRY_NAME: entry}},
    }}))  # fmt: skip
    env = client_env(home, with_clients=False)
    done = run(sp_command(["client", "uninstall", "claude-code"]), env, folder)
    assert done.returncode == 0, done.stderr
    projects = json.loads((home / ".claude.json").read_text())["projects"]
    assert projects[str(folder)]["mcpServers"] == {"other": other}
    assert projects[str(repo.resolve())]["mcpServers"] == {}
    again = run(sp_command(["client", "uninstall", "claude-code"]), env, folder)
    assert again.returncode == 0 and "nothing changed" in again.stdout
