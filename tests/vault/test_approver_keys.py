"""The enrolled security keys inside the vault: saved like any change (so a counter cannot be
rolled back without putting back an older vault file), kept by other changes, and absent from a
vault that never had one."""

from __future__ import annotations

from pathlib import Path

from tests.vault.vault_factory import make_vault, passphrase

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.vault"

KEYS = '{"keys": [], "rp_id": "gw-1.safeport.invalid", "user_id": "dXNlcg"}'


def test_the_keys_survive_a_lock_and_an_unlock_and_raise_the_generation(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    assert vault.approver_keys() is None
    before = vault.generation
    vault.record_approver_keys(KEYS)
    assert vault.generation == before + 1
    vault.record_approver_keys(KEYS)  # the same text again is not a save
    assert vault.generation == before + 1
    vault.remove(vault.entries()[0].name)
    vault.lock()
    assert store.unlock(passphrase()).approver_keys() == KEYS


def test_a_vault_without_keys_reads_none(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.accept_policy("[gateway]\n")
    vault.lock()
    assert store.unlock(passphrase()).approver_keys() is None
