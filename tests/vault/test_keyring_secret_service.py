"""Keyring unlock against a real Secret Service (gnome-keyring under dbus-run-session)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.cli.cli_runner import run_sp
from tests.conftest import need
from tests.vault.vault_factory import CANARY_TOKEN, PASSPHRASE, make_vault

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.vault"

DRIVER = Path(__file__).with_name("secret_service_driver.py")
REPO = Path(__file__).resolve().parents[2]


def _need_secret_service() -> None:
    for tool in ("dbus-run-session", "gnome-keyring-daemon", "secret-tool"):
        need(shutil.which(tool) is not None, f"{tool} is not installed (gnome-keyring, dbus-x11)")


def _session_env(tmp_path: Path) -> dict[str, str]:
    """A clean desktop-less environment: own HOME (the keyring files), no inherited bus."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DBUS_", "SAFEPORT_", "XDG_", "PYTHON_KEYRING"))
    }
    user_home = tmp_path / "user"
    user_home.mkdir(mode=0o700, exist_ok=True)
    env.update(HOME=str(user_home), PYTHONPATH=str(REPO))
    return env


def test_keyring_unlock_round_trip_on_secret_service(tmp_path: Path) -> None:
    _need_secret_service()
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "pass").write_bytes(PASSPHRASE + b"\n")
    _, vault = make_vault(home)
    vault_id = vault.vault_id
    vault.lock()
    done = subprocess.run(
        [
            "dbus-run-session",
            "--",
            sys.executable,
            str(DRIVER),
            str(home),
            str(home / "pass"),
            vault_id,
        ],
        capture_output=True,
        text=True,
        env=_session_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    steps: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])

    assert steps["enable"]["code"] == 0, steps["enable"]["err"]
    assert "any program running as your user can ask the Secret Service" in steps["enable"]["out"]
    assert steps["item_length"] == 44  # base64 of a random 32-byte key, not the passphrase
    assert json.loads(steps["status"]["out"])["keyring_enabled"] is True
    # The keyring's key opened the vault; with no gateway to hold it, it stays locked (2).
    assert steps["unlock"]["code"] == 2, steps["unlock"]["err"]
    assert "passphrase accepted" in steps["unlock"]["out"]
    assert steps["list"]["code"] == 0 and "deploy-token  token" in steps["list"]["out"]
    assert steps["disable"]["code"] == 0
    assert steps["item_length_after_disable"] == 0
    assert steps["unlock_after_disable"]["code"] == 2
    assert "keyring unlock is not enabled" in steps["unlock_after_disable"]["err"]
    assert steps["enable_again"]["code"] == 0
    assert steps["unlock_without_item"]["code"] == 2
    assert "holds no key for this vault" in steps["unlock_without_item"]["err"]
    everything = json.dumps(steps)
    assert CANARY_TOKEN.decode() not in everything and PASSPHRASE.decode() not in everything


def test_without_a_keyring_service_enable_fails_cleanly_and_changes_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "pass").write_bytes(PASSPHRASE + b"\n")
    make_vault(home)[1].lock()
    before = (home / "vault.sp").read_bytes()
    env = _session_env(tmp_path)
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={tmp_path}/no-bus-here"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "safeport",
            "vault",
            "keyring",
            "enable",
            "--passphrase-file",
            str(home / "pass"),
        ],
        capture_output=True,
        text=True,
        env={**env, "SAFEPORT_HOME": str(home)},
        timeout=60,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("sp: cannot store a key in the OS keyring")
    assert len(done.stderr.splitlines()) == 1
    assert (home / "vault.sp").read_bytes() == before
    assert run_sp("vault", "status", home=home).stdout.count("keyring unlock: disabled") == 1
