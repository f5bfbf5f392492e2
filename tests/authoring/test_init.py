"""`sp init` writes valid templates and the vault, and never overwrites anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from safeport.authoring.starter import uncommented
from tests.cli.running_gateway import running_gateway


def sp(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SAFEPORT_HOME": str(home),
        "HOME": str(home),
    }
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_init_writes_templates_and_a_vault_then_keeps_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    passphrase = tmp_path / "pass"
    passphrase.write_text("a long enough passphrase for the test\n")
    first = sp(home, "init", "--passphrase-file", str(passphrase))
    assert first.returncode == 0, first.stderr
    for name in ("gateway.toml", "context.toml", "vault.sp", "vault.pub.json"):
        assert (home / name).exists(), name
    assert (home / "gateway.toml").stat().st_mode & 0o077 == 0
    check = sp(home, "policy", "check")
    assert check.returncode == 0, check.stderr
    (home / "gateway.toml").write_text("# mine\n")
    vault_before = (home / "vault.sp").read_bytes()
    again = sp(home, "init", "--passphrase-file", str(passphrase))
    assert again.returncode == 0
    assert "kept existing" in again.stdout
    assert (home / "gateway.toml").read_text() == "# mine\n"
    assert (home / "vault.sp").read_bytes() == vault_before


def test_init_writes_examples_that_sp_policy_check_accepts_once_uncommented(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    passphrase = tmp_path / "pass"
    passphrase.write_text("a long enough passphrase for the test\n")
    assert sp(home, "init", "--passphrase-file", str(passphrase)).returncode == 0
    text = (home / "gateway.toml").read_text()
    assert sum(" # " in f" {line}" for line in text.splitlines()) >= 20  # a comment on most keys
    written = json.loads(sp(home, "policy", "check", "--json").stdout)
    assert written["credentials"] == written["ssh_hosts"] == written["http_services"] == []
    # The person's first step: the "#" taken off each example line, nothing else changed.
    (home / "gateway.toml").write_text(uncommented(text))
    check = sp(home, "policy", "check")
    assert check.returncode == 0, check.stdout + check.stderr
    out = check.stdout
    assert "https service deploy-api: https://api.example.com" in out
    assert "operation deployment_status: GET " in out and "approved once per session" in out
    assert "operation create_issue: POST " in out
    assert "ssh host staging: deploy@203.0.113.7:22" in out
    assert "command read_service_status" in out and "command restart_service" in out
    as_json = sp(home, "policy", "check", "--json")
    assert as_json.returncode == 0
    services = json.loads(as_json.stdout)["http_services"]
    approvals = {op["id"]: op["approval"] for op in services[0]["operations"]}
    assert approvals == {"deployment_status": "session", "create_issue": "per-call"}


def test_a_fresh_init_is_accepted_by_the_real_gateway_with_no_edit(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "pw").write_text("a long enough passphrase for the test\n")
    assert sp(home, "init", "--passphrase-file", str(home / "pw")).returncode == 0
    with running_gateway(home):
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        assert "the gateway serves it now" in accepted.stdout
        assert json.loads(sp(home, "policy", "check", "--json").stdout)["served"] is True


def test_init_never_writes_through_a_dangling_link(tmp_path: Path) -> None:
    # A dangling link "does not exist" to a check by name; writing the template through it
    # would create (or truncate) whatever it points at, with the mode that file gets there.
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.toml"
    (home / "gateway.toml").symlink_to(elsewhere)
    passphrase = tmp_path / "pass"
    passphrase.write_text("a long enough passphrase for the test\n")
    done = sp(home, "init", "--passphrase-file", str(passphrase))
    assert done.returncode == 0, done.stderr
    assert not elsewhere.exists()
    assert "kept existing" in done.stdout and (home / "gateway.toml").is_symlink()
    assert (home / "context.toml").stat().st_mode & 0o777 == 0o600
