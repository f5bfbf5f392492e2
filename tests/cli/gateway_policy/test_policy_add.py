"""`sp policy add http|ssh` appends a service or host that `sp policy check` accepts, from flags
or from answers typed at a terminal, and never writes a file that would not parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.gateway import HOST_KEY, REPO, clean_env
from safeport.shared.launch import sp_command
from tests.cli.terminal import Terminal
from tests.cli.test_help_and_errors import run

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli.gateway_policy.policy_draft"

EMPTY = "[gateway]\napproval_timeout_s = 120\n"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "gateway.toml").write_text(EMPTY)
    return home


def _checked(home: Path) -> dict[str, Any]:
    done = run(home, "policy", "check", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def test_an_http_service_from_flags_reads_per_session_and_writes_per_call(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = run(
        home, "policy", "add", "http", "github", "--base-url", "https://api.github.com",
        "--operation", "get_issue=GET /repos/{owner}/{repo}/issues/{number}",
        "--operation", "create_issue=POST /repos/{owner}/{repo}/issues",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [service] = _checked(home)["http_services"]
    assert service["credential"] == "github-token"
    ops = {op["id"]: op for op in service["operations"]}
    assert ops["get_issue"]["approval"] == "session" and ops["get_issue"]["read_only"]
    assert ops["get_issue"]["params"] == ["number", "owner", "repo"]
    assert ops["create_issue"]["approval"] == "per-call" and not ops["create_issue"]["read_only"]
    text = (home / "gateway.toml").read_text()
    assert text.startswith(EMPTY) and "[credentials.github-token]" in text
    # A second service on the same token does not declare the credential twice.
    again = run(
        home, "policy", "add", "http", "github-uploads", "--credential", "github-token",
        "--base-url", "https://uploads.github.com", "--operation", "ping=HEAD /",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert (home / "gateway.toml").read_text().count("[credentials.github-token]") == 1


def test_an_ssh_host_from_flags_passes_check(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = run(
        home, "policy", "add", "ssh", "staging", "--address", "203.0.113.7", "--user", "deploy",
        "--host-key", HOST_KEY, "--command", "status=systemctl status --no-pager {service}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [host] = _checked(home)["ssh_hosts"]
    assert host["address"] == "deploy@203.0.113.7:22" and host["credential"] == "staging-key"
    [command] = host["commands"]
    assert command["argv"] == "systemctl status --no-pager '{service}'"
    assert command["approval"] == "per-call"


def test_a_service_that_would_break_the_file_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    done = run(
        home, "policy", "add", "http", "api", "--base-url", "http://plain.example.com",
        "--operation", "get=GET /x",
    )  # fmt: skip
    assert done.returncode != 0 and "`base_url` must be an https:// URL" in done.stderr
    missing = run(home, "policy", "add", "ssh", "box", "--address", "h")
    assert missing.returncode != 0 and "--user USER" in missing.stderr
    assert (home / "gateway.toml").read_text() == EMPTY


def test_at_a_terminal_the_missing_values_are_asked(tmp_path: Path) -> None:
    home = _home(tmp_path)
    term = Terminal(sp_command(["policy", "add", "http", "deploy"]), clean_env(home), str(REPO))
    term.expect("base URL")
    term.type("https://api.example.com")
    term.expect("operation as ID=METHOD /path")
    term.type("status=GET /v1/{service}/status")
    term.expect("operation as ID=METHOD /path", times=2)
    term.type("")
    assert term.wait() == 0, term.seen
    [service] = _checked(home)["http_services"]
    assert [op["id"] for op in service["operations"]] == ["status"]
