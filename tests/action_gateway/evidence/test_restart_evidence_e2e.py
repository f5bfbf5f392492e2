"""Evidence across restarts, with real gateway processes: a vault file put back after the
gateway's own saves, journals cut or rewritten between runs, and an intent left open by a kill.

The rollback and journal tests run the real vault file (a fast KDF) and sealed journals; the
interrupted-intent test the in-memory vault with sealed journals and an executor that blocks.
In every case the restarted gateway starts with the vault locked, so what it finds it finds
from the chain and the cleartext members alone.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from harness.gateway import (
    PASSPHRASE,
    POLICY,
    REPO,
    Gateway,
    clean_env,
    decide,
    ssh,
    wait_card,
    wait_until,
)
from safeport.shared.audit import ZERO_HASH, JournalHead, format_record
from safeport.shared.paths import locate
from safeport.vault.checkpoints import VaultCheckpointSigner, dump_checkpoints
from safeport.vault.interface import VaultPublicKeys
from safeport.vault.kdf import KdfParams
from safeport.vault.secrets import SecretBytes
from safeport.vault.store import VaultFile

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.evidence"

FAST_KDF = KdfParams(memory_kib=8, iterations=1, lanes=1)
ALARMS = {
    "vault.rollback",
    "journal.truncated",
    "journal.rewritten",
    "checkpoint.invalid",
    "vault.public_keys_mismatch",
}


def alarms(gw: Gateway) -> list[str]:
    return [kind for kind in gw.kinds("sessions") if kind in ALARMS]


def status_alarms(gw: Gateway) -> list[str]:
    return [alarm["kind"] for alarm in gw.control("status")["result"]["alarms"]]


def sp(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        cwd=REPO,
        env=clean_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def verify_checkpoint(home: Path) -> subprocess.CompletedProcess[str]:
    return sp(home, "audit", "verify", "--checkpoint", str(home / "audit" / "checkpoint.json"))


def token_value(text: str) -> dict[str, Any]:
    return {"token": {"secret_b64": base64.b64encode(text.encode()).decode()}}


def save(gw: Gateway, op: str, **params: Any) -> None:
    reply = gw.control(op, passphrase=PASSPHRASE, **params)
    assert reply["ok"], reply


class RealVaultGateway(Gateway):
    def start(self, *extra: str, env: dict[str, str] | None = None, wait: bool = True) -> None:
        super().start("--real-vault", *extra, env=env, wait=wait)

    def restart(self) -> None:
        assert self.stop() == 0, self.stderr_path.read_text()
        self.start()


@pytest.fixture
def real(gateway_home: Path) -> Iterator[RealVaultGateway]:
    """A gateway on a real vault file (locked), serving nothing until a test accepts."""
    VaultFile.at(locate(env=clean_env(gateway_home))).create(
        SecretBytes(PASSPHRASE.encode()), kdf=FAST_KDF
    ).lock()
    gw = RealVaultGateway(gateway_home)
    gw.write_policy()
    gw.start()
    try:
        yield gw
    finally:
        if gw.proc is not None and gw.proc.poll() is None:
            gw.stop()


# -- rollback of the vault file ------------------------------------------------------------------


@pytest.mark.parametrize("change", ["rotate", "policy accept"])
def test_a_vault_put_back_after_the_gateways_own_save_raises_vault_rollback_also_after_a_restart(
    real: RealVaultGateway, tmp_path: Path, change: str
) -> None:
    """unlock → policy accept → copy vault.sp → rotate (or accept again) → lock → copy back →
    unlock: the generation the gateway reached by its own save is higher than the file's."""
    gw = real
    vault_file = gw.home / "vault.sp"
    gw.unlock()
    gw.accept_policy()
    save(gw, "vault.add", name="deploy-token", kind="token", value=token_value("first"))
    older = tmp_path / "vault-older.sp"
    shutil.copy2(vault_file, older)
    if change == "rotate":
        save(gw, "vault.rotate", name="deploy-token", value=token_value("second"))
    else:
        gw.write_policy(POLICY + "\n# one more line\n")
        gw.accept_policy()
    assert gw.control("vault.lock")["ok"]
    shutil.copy2(older, vault_file)  # the agent puts the older copy back
    gw.unlock()
    assert alarms(gw) == ["vault.rollback"]
    assert status_alarms(gw) == ["vault.rollback"]

    # A new process remembers nothing; the journal does (ref.generation of the saves).
    gw.restart()
    assert status_alarms(gw) == []
    gw.unlock()
    assert alarms(gw) == ["vault.rollback", "vault.rollback"]
    assert status_alarms(gw) == ["vault.rollback"]


def test_a_vault_put_back_while_the_gateway_was_stopped_raises_vault_rollback(
    real: RealVaultGateway, tmp_path: Path
) -> None:
    gw = real
    vault_file = gw.home / "vault.sp"
    gw.unlock()
    gw.accept_policy()
    older = tmp_path / "vault-older.sp"
    shutil.copy2(vault_file, older)
    save(gw, "vault.add", name="deploy-token", kind="token", value=token_value("first"))
    assert gw.stop() == 0
    shutil.copy2(older, vault_file)
    gw.start()
    gw.unlock()
    assert alarms(gw) == ["vault.rollback"]


def test_a_rollback_hidden_by_killing_the_gateway_and_cutting_the_save_record_is_still_caught(
    real: RealVaultGateway, tmp_path: Path
) -> None:
    """Each of the gateway's saves is signed at once, so the record of the newer generation
    cannot be cut without the cut showing, even when no lock or stop signs anything after it."""
    gw = real
    vault_file = gw.home / "vault.sp"
    gw.unlock()
    gw.accept_policy()
    save(gw, "vault.add", name="deploy-token", kind="token", value=token_value("first"))
    older = tmp_path / "vault-older.sp"
    shutil.copy2(vault_file, older)
    save(gw, "vault.rotate", name="deploy-token", value=token_value("second"))
    assert gw.proc is not None
    os.kill(gw.proc.pid, signal.SIGKILL)  # no lock, no stop: nothing signed after the rotate
    gw.proc.wait(10)
    sessions = gw.home / "audit" / "sessions.jsonl"
    lines = sessions.read_bytes().splitlines(keepends=True)
    rotated = next(i for i, line in enumerate(lines) if b'"kind":"vault.entry_rotated"' in line)
    sessions.write_bytes(b"".join(lines[:rotated]))
    shutil.copy2(older, vault_file)
    gw.start()
    assert alarms(gw) == ["journal.truncated"]
    assert gw.control("status")["result"]["alarms"][0]["journal"] == "sessions"


def test_saves_locks_unlocks_and_restarts_raise_no_alarm(real: RealVaultGateway) -> None:
    gw = real
    gw.unlock()
    gw.accept_policy()
    save(gw, "vault.add", name="deploy-token", kind="token", value=token_value("first"))
    save(gw, "vault.rotate", name="deploy-token", value=token_value("second"))
    assert gw.control("vault.lock")["ok"]
    gw.unlock()
    save(gw, "vault.remove", name="deploy-token")
    gw.restart()
    gw.unlock()
    assert gw.control("audit.checkpoint")["ok"]
    gw.restart()
    gw.unlock()
    assert alarms(gw) == []
    assert status_alarms(gw) == []
    assert gw.stop() == 0
    verified = verify_checkpoint(gw.home)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # Every unlock and every save journaled the generation it saw, in the clear.
    generations = [
        record["ref"]["generation"]
        for record in gw.journal("sessions")
        if record["kind"] in ("vault.unlocked", "vault.entry_added", "vault.entry_rotated")
    ]
    assert generations == sorted(generations) and len(generations) == 6


# -- journals cut or rewritten between runs ------------------------------------------------------


def _three_denied_actions(gw: Gateway) -> None:
    agent = gw.spawn_agent()
    for n in range(3):
        reply = agent.call(ssh(f"r{n}", command="no_such_command"))
        assert reply["error"]["code"] == "denied", reply
    agent.exit()
    assert gw.kinds("actions").count("action.denied") == 3


def _rechain_from(path: Path, seq: int) -> None:
    """Change record ``seq`` (its timestamp) and re-chain everything after it: every hash and
    prev is right again, as an attacker with the file would leave it."""
    head = JournalHead(seq=0, hash=ZERO_HASH)
    out = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        if record["seq"] < seq:
            out.append(line + b"\n")
            head = JournalHead(seq=record["seq"], hash=record["hash"])
            continue
        ts = "2020-01-01T00:00:00.000000Z" if record["seq"] == seq else record["ts"]
        members = {
            k: v for k, v in record.items() if k not in ("hash", "seq", "prev", "ts", "kind")
        }
        rewritten, head = format_record(head, ts, record["kind"], members)
        out.append(rewritten)
    path.write_bytes(b"".join(out))


def _cut_last_record(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


@pytest.mark.parametrize(
    ("tamper", "alarm"),
    [(_cut_last_record, "journal.truncated"), (lambda p: _rechain_from(p, 2), "journal.rewritten")],
    ids=["truncated", "rewritten"],
)
def test_a_journal_changed_between_runs_is_reported_at_the_next_start_and_by_verify(
    real: RealVaultGateway, tamper: Any, alarm: str
) -> None:
    gw = real
    gw.unlock()
    gw.accept_policy()
    _three_denied_actions(gw)
    assert gw.stop() == 0  # locks: the heads are signed, and kept inside the vault too
    actions = gw.home / "audit" / "actions.jsonl"
    tamper(actions)
    assert sp(gw.home, "audit", "verify", str(actions)).returncode == 0  # the chain is valid

    gw.start()
    assert alarms(gw) == [alarm]  # found while the vault is still locked
    status = sp(gw.home, "gateway", "status")
    assert f"ALARM {alarm}: actions.jsonl no longer holds the head signed at sequence 3" in (
        status.stdout
    )
    gw.unlock()  # the vault's copy of the head names the same cut: not a second alarm
    assert alarms(gw) == [alarm]
    assert gw.control("audit.checkpoint")["ok"]  # new heads are signed past the cut...
    gw.restart()
    assert alarms(gw) == [alarm]  # ...and a clean restart raises nothing new
    assert gw.stop() == 0
    verified = verify_checkpoint(gw.home)  # ...but the signed head it contradicts stays
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert "actions" in verified.stdout + verified.stderr


def test_a_journal_cut_while_checkpoint_json_was_removed_is_found_at_unlock_from_the_vault(
    real: RealVaultGateway,
) -> None:
    gw = real
    gw.unlock()
    gw.accept_policy()
    _three_denied_actions(gw)
    assert gw.stop() == 0
    _cut_last_record(gw.home / "audit" / "actions.jsonl")
    (gw.home / "audit" / "checkpoint.json").unlink()
    gw.start()
    assert alarms(gw) == []  # nothing to compare with while locked
    gw.unlock()
    assert alarms(gw) == ["journal.truncated"]
    found = gw.control("status")["result"]["alarms"][0]
    assert (found["source"], found["signed_seq"], found["last_seq"]) == ("vault", 3, 2)


def test_a_journal_cut_under_a_running_gateway_is_an_alarm_before_the_next_signature(
    real: RealVaultGateway,
) -> None:
    """The writer continues from whatever the file ends with; the next checkpoint must not
    sign that continuation as if nothing happened."""
    gw = real
    gw.unlock()
    gw.accept_policy()
    _three_denied_actions(gw)
    assert gw.control("audit.checkpoint")["ok"]
    _cut_last_record(gw.home / "audit" / "actions.jsonl")
    agent = gw.spawn_agent()
    assert agent.call(ssh("after", command="no_such_command"))["error"]["code"] == "denied"
    agent.exit()
    assert gw.control("audit.checkpoint")["ok"]
    # Cut to 2 records, then written on: sequence 3 is now a different record.
    assert alarms(gw) == ["journal.rewritten"]
    found = gw.control("status")["result"]["alarms"][0]
    assert (found["journal"], found["source"], found["signed_seq"]) == (
        "actions",
        "running gateway",
        3,
    )
    assert gw.control("audit.checkpoint")["ok"]
    assert alarms(gw) == ["journal.rewritten"]  # once
    assert gw.stop() == 0
    assert verify_checkpoint(gw.home).returncode == 1


def test_a_checkpoint_file_signed_by_another_key_is_an_alarm_and_the_vault_still_names_the_cut(
    real: RealVaultGateway,
) -> None:
    """An attacker cuts the journal and signs a matching checkpoint.json with a key of their
    own: the start check refuses it, and the heads kept inside the vault show the cut."""
    gw = real
    gw.unlock()
    gw.accept_policy()
    _three_denied_actions(gw)
    assert gw.stop() == 0
    actions = gw.home / "audit" / "actions.jsonl"
    _cut_last_record(actions)
    last = json.loads(actions.read_bytes().splitlines()[-1])
    key = Ed25519PrivateKey.generate()
    forged_keys = VaultPublicKeys(
        audit_x25519=b"\x00" * 32,
        checkpoint_ed25519=key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw),
    )
    signer = VaultCheckpointSigner(SecretBytes(key.private_bytes_raw()), forged_keys)
    forged = signer.sign("actions", JournalHead(seq=last["seq"], hash=last["hash"]))
    (gw.home / "audit" / "checkpoint.json").write_bytes(dump_checkpoints([forged]))
    gw.start()
    assert alarms(gw) == ["checkpoint.invalid"]
    gw.unlock()
    assert alarms(gw) == ["checkpoint.invalid", "journal.truncated"]


# -- an intent with no outcome -------------------------------------------------------------------

HANG_POLICY = (
    POLICY
    + """
[ssh.hosts.build-staging.commands.hang_forever]
argv = ["true"]
"""
)


def test_an_intent_left_open_by_a_kill_is_closed_by_one_action_interrupted_at_restart(
    gateway_home: Path,
) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy(HANG_POLICY)
    gw.start("--seal")
    try:
        gw.unlock()
        gw.accept_policy()
        agent = gw.spawn_agent()
        agent.send(ssh("done", service="web"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        assert agent.next()["ok"]
        agent.send(ssh("stuck", command="hang_forever"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        wait_until(lambda: any(t.get("command") == "hang_forever" for t in gw.touched()))
        assert gw.proc is not None
        os.kill(gw.proc.pid, signal.SIGKILL)  # between the intent and its outcome
        gw.proc.wait(10)
        agent.proc.kill()
        records = gw.journal("actions")
        intents = [r for r in records if r["kind"] == "action.intent"]
        assert len(intents) == 2 and records[-1]["kind"] == "action.intent"

        gw.start("--seal")  # the vault is locked: the scan reads no sealed body
        interrupted = [r for r in gw.journal("actions") if r["kind"] == "action.interrupted"]
        assert [r["ref"] for r in interrupted] == [{"intent": intents[1]["seq"]}]
        assert "sealed" in interrupted[0] and "body" not in interrupted[0]
        outcome = [r for r in gw.journal("actions") if r["kind"] == "action.outcome"]
        assert [r["ref"] for r in outcome] == [{"intent": intents[0]["seq"]}]

        assert gw.stop() == 0
        gw.start("--seal")
        assert gw.kinds("actions").count("action.interrupted") == 1
    finally:
        if gw.proc is not None and gw.proc.poll() is None:
            gw.stop()
