"""The encrypted credential store. Only the gateway process (and `sp` on the file when no gateway
runs) imports this package; the context server never does (a test pins it).

Public surface (a test pins it): :class:`VaultFile` (the locked file, a ``VaultStore``),
:class:`OpenVault` (an ``UnlockedVault``), :class:`AuditSealer`/:class:`AuditOpener` (journal
bodies), checkpoint signing and checking, the KDF parameters, and the vault's errors.
"""

from safeport.vault.checkpoints import (
    CheckpointInvalid,
    CheckpointVerdict,
    VaultCheckpointSigner,
    compare,
    dump_checkpoints,
    load_checkpoints,
    verify_checkpoint,
)
from safeport.vault.errors import (
    CannotUnlock,
    EntryError,
    KeyringProblem,
    NotAVault,
    UnsafeVaultFile,
    VaultChanged,
    VaultLocked,
)
from safeport.vault.files import VaultMissing
from safeport.vault.kdf import PRODUCTION_KDF, KdfParams
from safeport.vault.keyring_wrap import KeyringBackend, OsKeyring
from safeport.vault.public_file import read_public_keys
from safeport.vault.sealing import AuditOpener, AuditSealer
from safeport.vault.store import VaultFile
from safeport.vault.unlocked import OpenVault

__all__ = [
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
