"""The encrypted credential store. Only the gateway process (and `sp` on the file when no gateway
runs) imports this package; the context server never does (a test pins it).

Public surface (a test pins it): :class:`VaultFile` (the locked file, a ``VaultStore``),
:class:`OpenVault` (an ``UnlockedVault``), :class:`FileVaultBackend` (vault commands on the file
when no gateway runs), :class:`AuditSealer`/:class:`AuditOpener` (journal bodies), checkpoint
signing and checking, the KDF parameters, the vault's errors, and these modules: ``interface``
(the contract the gateway codes against), ``secrets`` (the values handed to executors),
``signed_note`` (checkpoints as C2SP notes), ``timestamp_check`` (RFC 3161 stamps of them) and
``checkpoint_stamps`` (the stored stamps, checked for `sp audit verify`).
"""

from safeport.vault.backend import (
    Authority,
    FileVaultBackend,
    UnlockReport,
    VaultBackend,
    VaultStatus,
)
from safeport.vault.checkpoint_check import (
    NoteCheckpoints,
    SignedCheckpoints,
    trusted_public_keys,
)
from safeport.vault.checkpoints import (
    UNSIGNED_JOURNALS,
    CheckpointInvalid,
    CheckpointVerdict,
    VaultCheckpointSigner,
    check_consistent,
    compare,
    compare_head,
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
from safeport.vault.files import VaultMissing, replace_atomically
from safeport.vault.kdf import PRODUCTION_KDF, KdfParams
from safeport.vault.keyring_wrap import KeyringBackend, OsKeyring, trade_off
from safeport.vault.passphrase import weakness
from safeport.vault.public_file import decode_public_keys, read_public_keys
from safeport.vault.sealing import AuditOpener, AuditSealer
from safeport.vault.store import VaultFile
from safeport.vault.unlocked import OpenVault

__all__ = [
    "PRODUCTION_KDF",
    "UNSIGNED_JOURNALS",
    "AuditOpener",
    "AuditSealer",
    "Authority",
    "CannotUnlock",
    "CheckpointInvalid",
    "CheckpointVerdict",
    "EntryError",
    "FileVaultBackend",
    "KdfParams",
    "KeyringBackend",
    "KeyringProblem",
    "NotAVault",
    "NoteCheckpoints",
    "OpenVault",
    "OsKeyring",
    "SignedCheckpoints",
    "UnlockReport",
    "UnsafeVaultFile",
    "VaultBackend",
    "VaultChanged",
    "VaultCheckpointSigner",
    "VaultFile",
    "VaultLocked",
    "VaultMissing",
    "VaultStatus",
    "check_consistent",
    "checkpoint_stamps",
    "compare",
    "compare_head",
    "decode_public_keys",
    "dump_checkpoints",
    "interface",
    "load_checkpoints",
    "read_public_keys",
    "replace_atomically",
    "secrets",
    "signed_note",
    "timestamp_check",
    "trade_off",
    "trusted_public_keys",
    "verify_checkpoint",
    "weakness",
]
