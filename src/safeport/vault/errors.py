"""The vault's errors. Every unlock failure is one error, so a caller learns nothing from which
check failed (wrong passphrase, a flipped byte, a truncated file); only "this is not a vault I can
read at all" is told apart, because the fix is different."""

from __future__ import annotations

from safeport.errors import Denied, EnvironmentProblem, Error, UsageError


class CannotUnlock(Denied):
    """Wrong passphrase, altered or damaged file: deliberately indistinguishable."""

    def __init__(self) -> None:
        super().__init__(
            "cannot unlock the vault: wrong passphrase, or the file was altered or damaged",
            hint="retry the passphrase; if it is right, restore the vault from a backup",
        )


class NotAVault(EnvironmentProblem):
    """The file is not a safeport vault, or a format version this sp cannot read."""


class UnsafeVaultFile(EnvironmentProblem):
    """The vault file or its folder could be read or swapped by someone else; refused."""


class VaultLocked(Error):
    """The vault is locked: from a locked vault object, and from the gateway's view of the vault
    alike, so a lock at any moment of a request is answered ``locked``."""

    exit_code = 1
    wire_code = "locked"

    def __init__(self) -> None:
        super().__init__("the vault is locked", hint="run `sp vault unlock` and retry")


class EntryError(UsageError):
    """A name or value the vault refuses (duplicate, unknown, malformed): never echoes a value."""


class KeyringProblem(EnvironmentProblem):
    """The OS keyring is missing, refused, or holds no key for this vault."""


class VaultChanged(EnvironmentProblem):
    """The file on disk changed since this process unlocked it; saving would lose that change."""
