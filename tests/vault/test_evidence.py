"""The gateway's evidence inside the vault: saved like any change, authenticated, and absent
from a vault that never had it."""

from __future__ import annotations

from pathlib import Path

from safeport.shared.audit import JournalHead
from safeport.vault.interface import VaultEvidence
from tests.vault.vault_factory import make_vault, passphrase

EVIDENCE = VaultEvidence(
    heads={"sessions": JournalHead(12, "ab" * 32), "actions": JournalHead(3, "cd" * 32)},
    highest_generation=7,
)


def test_evidence_survives_a_lock_and_an_unlock_and_raises_the_generation(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    assert vault.evidence() is None
    before = vault.generation
    vault.record_evidence(EVIDENCE)
    assert vault.generation == before + 1
    vault.lock()
    reopened = store.unlock(passphrase())
    assert reopened.evidence() == EVIDENCE
    assert [e.name for e in reopened.entries()] == [
        e.name for e in store.unlock(passphrase()).entries()
    ]


def test_the_same_evidence_again_is_not_a_save(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    vault.record_evidence(EVIDENCE)
    generation = vault.generation
    vault.record_evidence(VaultEvidence(dict(EVIDENCE.heads), EVIDENCE.highest_generation))
    assert vault.generation == generation


def test_other_changes_keep_the_evidence(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.record_evidence(EVIDENCE)
    vault.remove(vault.entries()[0].name)
    vault.accept_policy("[gateway]\n")
    vault.lock()
    assert store.unlock(passphrase()).evidence() == EVIDENCE
