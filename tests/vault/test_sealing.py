"""Journal bodies sealed to the audit key while the vault is locked; opened only by the vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from safeport.errors import AuditError
from safeport.shared.audit import JournalWriter, read_records, verify_journal
from safeport.vault import AuditSealer, VaultLocked
from tests.vault.vault_factory import CANARY_TOKEN, make_vault, passphrase


def test_records_are_sealed_from_the_public_file_alone_and_open_with_the_vault(
    tmp_path: Path,
) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()  # sealing needs nothing but vault.pub.json
    journal = tmp_path / "actions.jsonl"
    body = {"action": "ssh_exec", "target": "build-staging", "note": "sealed-marker-51"}
    with JournalWriter(journal, sealer=AuditSealer.from_public_file(store.public_path)) as w:
        w.append("action.intent", body)
        w.append("action.outcome", {"status": 0})
    raw = journal.read_bytes()
    assert b"sealed-marker-51" not in raw and b"build-staging" not in raw
    assert verify_journal(journal).chain == "valid"  # the chain needs no key
    records = read_records(journal)
    opener = store.unlock(passphrase()).audit_opener()
    assert json.loads(opener.open(records[0]["sealed"])) == body


def test_a_tampered_or_foreign_sealed_body_does_not_open(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(mode=0o700)
    (tmp_path / "b").mkdir(mode=0o700)
    store, vault = make_vault(tmp_path / "a")
    _, other = make_vault(tmp_path / "b")
    sealed = dict(AuditSealer(store.public_keys()).seal(b'{"x":1}'))
    with pytest.raises(AuditError, match="could not be opened"):
        other.audit_opener().open(sealed)
    flipped = dict(sealed, ct=("A" if sealed["ct"][0] != "A" else "B") + sealed["ct"][1:])
    with pytest.raises(AuditError):
        vault.audit_opener().open(flipped)
    with pytest.raises(AuditError):
        vault.audit_opener().open({"alg": "none", "ct": sealed["ct"]})
    assert vault.audit_opener().open(sealed) == b'{"x":1}'


def test_each_record_uses_a_fresh_ephemeral_key(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    sealer = AuditSealer(store.public_keys())
    first, second = sealer.seal(b"same"), sealer.seal(b"same")
    assert first["epk"] != second["epk"] and first["ct"] != second["ct"]


def test_a_swapped_public_file_is_detected_at_unlock(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir(mode=0o700)
    (tmp_path / "theirs").mkdir(mode=0o700)
    store, vault = make_vault(tmp_path / "mine")
    attacker, _ = make_vault(tmp_path / "theirs")
    assert vault.public_file_state() == "matches"
    store.public_path.write_bytes(attacker.public_path.read_bytes())
    assert vault.public_file_state() == "mismatch"
    vault.rewrite_public_file()
    assert vault.public_file_state() == "matches"
    assert CANARY_TOKEN not in store.public_path.read_bytes()


def test_an_opener_stops_working_when_the_vault_locks(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    sealed = AuditSealer(store.public_keys()).seal(b"{}")
    opener = vault.audit_opener()
    vault.lock()
    with pytest.raises(VaultLocked):
        opener.open(sealed)
