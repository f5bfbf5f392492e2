"""The whole path with the real parts: `sp vault init/add`, `sp gateway run`, `sp vault unlock`,
`sp policy accept`, a card approved with `sp approvals approve`, the real SSH executor, sealed
journals, and `sp audit verify --checkpoint` after `sp gateway stop`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import HOST_KEY, REPO, AgentProcess, clean_env, wait_until
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.vault import FileVaultBackend, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.conftest import need
from tests.vault.vault_factory import FAST_KDF

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"

PASSPHRASE = "correct horse battery staple"
CANARY = "CANARY-REAL-VAULT-41c2"

POLICY = f"""
[gateway]
approval_timeout_s = 20

[credentials.build-key]
kind = "ssh-key"
approval = "per-call"

[ssh.hosts.nowhere]
address = "127.0.0.1"
port = 1
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "build-key"
connect_timeout_s = 2

[ssh.hosts.nowhere.commands.uptime]
argv = ["uptime"]
"""


def sp(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        cwd=REPO,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
    )


def _home(tmp_path: Path, *, sp_vault_init: bool) -> Path:
    """A home with a vault holding build-key and POLICY written (not yet accepted).

    With ``sp_vault_init`` the vault is made by `sp vault init` at the production KDF costs
    (about a second and a half per passphrase proof on two busy cores); otherwise with
    test-sized costs, passed explicitly: the commands, the gateway and every passphrase check
    run as written, the tests that share this home are about them and not about the KDF's cost
    (tests/vault/test_format.py holds the production costs, and the end-to-end test below
    starts from `sp vault init` itself).
    """
    need(shutil.which("ssh-keygen") is not None, "ssh-keygen (openssh-client) is not installed")
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "pw").write_text(PASSPHRASE + "\n")
    key = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", CANARY, "-f", str(key)], check=True
    )
    if sp_vault_init:
        assert sp(home, "vault", "init", "--passphrase-file", str(home / "pw")).returncode == 0
    else:
        backend = FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF)
        backend.init(SecretBytes(PASSPHRASE.encode()))
    added = sp(
        home,
        "vault",
        "add",
        "build-key",
        "--kind",
        "ssh-key",
        "--value-file",
        str(key),
        "--passphrase-file",
        str(home / "pw"),
    )
    assert added.returncode == 0, added.stderr
    (home / "gateway.toml").write_text(POLICY)
    return home


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    yield _home(tmp_path, sp_vault_init=False)


@pytest.fixture
def home_by_sp_vault_init(tmp_path: Path) -> Iterator[Path]:
    yield _home(tmp_path, sp_vault_init=True)


def test_the_real_gateway_end_to_end(home_by_sp_vault_init: Path) -> None:
    home = home_by_sp_vault_init
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]),
        cwd=REPO,
        env=clean_env(home),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        unlocked = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
        assert unlocked.returncode == 0, unlocked.stderr
        assert "vault unlocked in the gateway" in unlocked.stdout
        status = json.loads(sp(home, "vault", "status", "--json").stdout)
        assert status["holder"].startswith("the gateway") and "unlocked" in status["holder"]
        listed = sp(home, "vault", "list", "--json")
        assert "build-key" in listed.stdout and CANARY not in listed.stdout
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        assert "+[ssh.hosts.nowhere]" in accepted.stdout

        agent = AgentProcess(home, ["flock", str(home / "client.lock")])
        agent.send(
            {
                "v": 1,
                "id": "r1",
                "type": "propose",
                "action": "ssh_exec",
                "host_id": "nowhere",
                "command_id": "uptime",
                "args": {},
            }
        )
        card_id = ""
        for _ in range(100):
            listed = sp(home, "approvals", "list", "--json")
            if listed.stdout.strip() not in ("", "[]"):
                card_id = json.loads(listed.stdout)[0]["id"]
                break
            time.sleep(0.1)
        assert card_id
        approved = sp(home, "approvals", "approve", card_id, "--passphrase-file", str(home / "pw"))
        assert approved.returncode == 0, approved.stderr
        reply = agent.next(30)
        assert reply["error"]["code"] == "upstream"  # nothing listens on port 1
        agent.exit()
        assert "vault locked" in sp(home, "vault", "lock").stdout
        assert sp(home, "gateway", "stop").returncode == 0
        assert gateway.wait(20) == 0
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
    _, err = gateway.communicate()
    assert CANARY not in err
    audit = home / "audit"
    for path in audit.iterdir():
        assert CANARY.encode() not in path.read_bytes()
        assert PASSPHRASE.encode() not in path.read_bytes()
    actions = (audit / "actions.jsonl").read_text()
    assert '"sealed"' in actions and '"body"' not in actions  # sealed to the vault's audit key
    verified = sp(home, "audit", "verify", "--checkpoint", str(audit / "checkpoint.json"))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "chain: valid" in verified.stdout
    assert "checkpoint: " in verified.stdout and "matches" in verified.stdout


def test_sp_approvals_watch_answers_a_card_at_the_prompt(home: Path) -> None:
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]),
        cwd=REPO,
        env=clean_env(home),
        stderr=subprocess.DEVNULL,
    )
    watcher = None
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        assert sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw")).returncode == 0
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stderr
        watcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "safeport",
                "approvals",
                "watch",
                "--passphrase-file",
                str(home / "pw"),
            ],
            cwd=REPO,
            env={**clean_env(home), "COLUMNS": "200"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert watcher.stdout is not None and watcher.stdin is not None
        assert "watching for approval cards" in watcher.stdout.readline()
        agent = AgentProcess(home, ["flock", "-s", str(home / "client.lock")])
        agent.send(
            {
                "v": 1,
                "id": "w1",
                "type": "propose",
                "action": "ssh_exec",
                "host_id": "nowhere",
                "command_id": "uptime",
                "args": {},
            }
        )
        shown = ""
        while "approve?" not in shown:
            shown += watcher.stdout.read(1)
        assert "approval requested" in shown and "uptime" in shown and "127.0.0.1" in shown
        time.sleep(1.6)  # a key pressed as the card appears is not taken as its answer
        watcher.stdin.write("y\n")
        watcher.stdin.flush()
        reply = agent.next(30)
        assert reply["error"]["code"] == "upstream"  # approved, then the real executor ran
        agent.exit()
    finally:
        if watcher is not None:
            watcher.kill()
            watcher.wait()
        assert sp(home, "gateway", "stop").returncode == 0
        gateway.wait(20)


def test_vault_entries_change_through_a_running_gateway(home: Path, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(CANARY + "-token\n")
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]),
        cwd=REPO,
        env=clean_env(home),
        stderr=subprocess.DEVNULL,
    )
    pw = ("--passphrase-file", str(home / "pw"))
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        added = sp(
            home, "vault", "add", "deploy-token", "--kind", "token", "--value-file", str(token), *pw
        )
        assert added.returncode == 0, added.stderr
        listed = sp(home, "vault", "list", "--json").stdout
        assert "deploy-token" in listed and CANARY not in listed
        rotated = sp(
            home,
            "vault",
            "rotate",
            "deploy-token",
            "--kind",
            "token",
            "--value-file",
            str(token),
            *pw,
        )
        assert rotated.returncode == 0, rotated.stderr
        assert sp(home, "vault", "remove", "deploy-token", *pw).returncode == 0
        assert "deploy-token" not in sp(home, "vault", "list", "--json").stdout
        kinds = [
            json.loads(line)["kind"]
            for line in (home / "audit" / "sessions.jsonl").read_text().splitlines()
        ]
        assert {"vault.entry_added", "vault.entry_rotated", "vault.entry_removed"} <= set(kinds)
    finally:
        assert sp(home, "gateway", "stop").returncode == 0
        gateway.wait(20)
    # The gateway saved the file: a fresh unlock from the file sees the same entries.
    assert "deploy-token" not in sp(home, "vault", "list", "--json", *pw).stdout
    assert "build-key" in sp(home, "vault", "list", "--json", *pw).stdout


def test_an_older_vault_file_put_back_raises_a_rollback_alarm(home: Path, tmp_path: Path) -> None:
    older = tmp_path / "vault-before.sp"
    shutil.copy2(home / "vault.sp", older)
    token = tmp_path / "token"
    token.write_text("CANARY-TOKEN-ROLLBACK\n")
    added = sp(home, "vault", "add", "later-token", "--kind", "token",
               "--value-file", str(token), "--passphrase-file", str(home / "pw"))  # fmt: skip
    assert added.returncode == 0, added.stderr
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]),
        cwd=REPO,
        env=clean_env(home),
        stderr=subprocess.DEVNULL,
    )
    pw = str(home / "pw")
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        assert sp(home, "vault", "unlock", "--passphrase-file", pw).returncode == 0
        assert sp(home, "vault", "lock").returncode == 0
        assert sp(home, "vault", "unlock", "--passphrase-file", pw).returncode == 0  # same file
        assert sp(home, "vault", "lock").returncode == 0
        shutil.copy2(older, home / "vault.sp")  # the attacker restores an older copy
        assert sp(home, "vault", "unlock", "--passphrase-file", pw).returncode == 0
        assert sp(home, "gateway", "stop").returncode == 0
        assert gateway.wait(20) == 0
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
    kinds = [
        json.loads(line)["kind"]
        for line in (home / "audit" / "sessions.jsonl").read_text().splitlines()
    ]
    assert kinds.count("vault.unlocked") == 3
    assert kinds.count("vault.rollback") == 1
    assert (
        kinds.index("vault.rollback") > [i for i, k in enumerate(kinds) if k == "vault.unlocked"][1]
    )
