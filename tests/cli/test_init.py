"""`sp init` writes valid templates and the vault, and never overwrites anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
