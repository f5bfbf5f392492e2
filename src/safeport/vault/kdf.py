"""Passphrase → key-encryption key with Argon2id, one derivation at a time per process.

The parameters travel in the vault header, so they can be raised later without breaking old
vaults. Memory is capped at 64 MiB and derivations are serialised by a process-wide lock: a
flood of unlock attempts on the control socket queues up instead of allocating 64 MiB each.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import cast

from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from safeport.vault.secrets import SecretBytes

KEY_BYTES = 32
SALT_BYTES = 16
MAX_MEMORY_KIB = 64 * 1024
MAX_ITERATIONS = 64
MAX_LANES = 8

_KDF_LOCK = threading.Lock()


@dataclass(frozen=True)
class KdfParams:
    """Argon2id costs as stored in the header; construction refuses anything out of bounds."""

    memory_kib: int
    iterations: int
    lanes: int

    def __post_init__(self) -> None:
        # A tampered header must not make unlock allocate gigabytes or spin for hours.
        if not 1 <= self.lanes <= MAX_LANES:
            raise ValueError("lanes out of range")
        if not 8 * self.lanes <= self.memory_kib <= MAX_MEMORY_KIB:
            raise ValueError("memory cost out of range")
        if not 1 <= self.iterations <= MAX_ITERATIONS:
            raise ValueError("iterations out of range")


# 64 MiB, 10 passes, 1 lane: about 0.5 s on the reference machine (benchmarks/bench_vault.py).
# One lane because the gateway serialises derivations anyway and a second lane only helps when a
# second core is idle.
PRODUCTION_KDF = KdfParams(memory_kib=MAX_MEMORY_KIB, iterations=10, lanes=1)


def new_salt() -> bytes:
    return os.urandom(SALT_BYTES)


def derive_key(passphrase: SecretBytes, salt: bytes, params: KdfParams) -> bytearray:
    """The key-encryption key, in a buffer the caller zeroes when done."""
    out = bytearray(KEY_BYTES)
    kdf = Argon2id(
        salt=salt,
        length=KEY_BYTES,
        iterations=params.iterations,
        lanes=params.lanes,
        memory_cost=params.memory_kib,
    )
    # The view, not reveal(): a flood of callers queued on the lock holds no passphrase copies.
    with _KDF_LOCK, passphrase.exposed() as secret:
        kdf.derive_into(as_bytes(secret), out)
    return out


def as_bytes(view: memoryview) -> bytes:
    """Type a buffer for cryptography's stubs, which say ``bytes`` where any buffer is read."""
    return cast(bytes, view)


def zero(buffer: bytearray) -> None:
    """Overwrite a buffer in place (best effort: copies made elsewhere are out of reach)."""
    buffer[:] = bytes(len(buffer))
