"""What an unlocked vault asks of the file it was read from (pure, no I/O).

:class:`~safeport.vault.unlocked.OpenVault` writes every change back to its file and reads the
clock and the OS keyring through it; :class:`~safeport.vault.store.VaultFile` is the one
implementation, and it creates the open vault. The contract lives below both, so neither module
has to name the other to be read or type-checked.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

from safeport.vault.keyring_wrap import KeyringBackend


class BackingFile(Protocol):
    """The vault file behind an unlocked vault: where it lives and how a change is saved."""

    path: Path
    public_path: Path  # vault.pub.json, rewritten when the keys inside the vault change
    max_bytes: int  # the largest file a read accepts, and so the largest a save may write
    keyring: KeyringBackend
    clock: Callable[[], datetime]

    def replace(self, data: bytes, *, expected_generation: int | None) -> None:
        """Atomically replace the file, if it is still the generation the caller unlocked."""
        ...
