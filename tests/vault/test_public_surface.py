"""The vault package's public names, pinned: anything else is private and may change."""

from __future__ import annotations

import safeport.vault
from safeport.vault import AuditSealer, OpenVault, VaultCheckpointSigner, VaultFile
from safeport.vault.interface import CheckpointSigner, UnlockedVault, VaultStore


def test_the_public_names_are_exactly_these() -> None:
    assert sorted(safeport.vault.__all__) == sorted(
        [
            "PRODUCTION_KDF",
            "AuditOpener",
            "AuditSealer",
            "CannotUnlock",
            "CheckpointInvalid",
            "CheckpointVerdict",
            "EntryError",
            "KdfParams",
            "KeyringBackend",
            "KeyringProblem",
            "NotAVault",
            "OpenVault",
            "OsKeyring",
            "UnsafeVaultFile",
            "VaultChanged",
            "VaultCheckpointSigner",
            "VaultFile",
            "VaultLocked",
            "VaultMissing",
            "compare",
            "dump_checkpoints",
            "load_checkpoints",
            "read_public_keys",
            "verify_checkpoint",
        ]
    )


def test_the_implementations_satisfy_the_contract_the_gateway_codes_against() -> None:
    store: type[VaultStore] = VaultFile
    unlocked: type[UnlockedVault] = OpenVault
    signer: type[CheckpointSigner] = VaultCheckpointSigner
    assert (store, unlocked, signer) == (VaultFile, OpenVault, VaultCheckpointSigner)
    from safeport.shared.audit import BodySealer

    sealer: type[BodySealer] = AuditSealer
    assert sealer is AuditSealer
