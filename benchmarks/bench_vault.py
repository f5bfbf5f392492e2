"""Vault costs, side by side with the bare operations they are built on.

    python benchmarks/bench_vault.py [--entries 50] [--rounds 5] [--dir DIR]

Reports (1) unlock with the production Argon2id parameters vs the bare Argon2id derivation with
the same parameters (the rest of unlock is the overhead), (2) `add` (decrypt-free: re-encrypt the
whole payload, atomic temp+fsync+rename+fsync-dir) vs a bare AES-256-GCM encrypt of the same
payload size plus one write+fsync, and (3) listing entries of an unlocked vault. Medians of
``--rounds``; ratios are ours/bare for times (lower is better, 1.0 = no overhead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from safeport.vault import PRODUCTION_KDF, VaultFile
from safeport.vault.secrets import SecretBytes

PASSPHRASE = b"benchmark passphrase"


class NoKeyring:
    def get(self, account: str) -> str | None:
        return None

    def set(self, account: str, value: str) -> None:
        raise RuntimeError("not used")

    def delete(self, account: str) -> None:
        return None


def timed(action: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bare_kdf() -> None:
    Argon2id(
        salt=os.urandom(16),
        length=32,
        iterations=PRODUCTION_KDF.iterations,
        lanes=PRODUCTION_KDF.lanes,
        memory_cost=PRODUCTION_KDF.memory_kib,
    ).derive(PASSPHRASE)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=options.dir) as folder:
        base = Path(folder)
        base.chmod(0o700)
        store = VaultFile(base / "vault.sp", keyring=NoKeyring())
        vault = store.create(SecretBytes(PASSPHRASE))
        for index in range(options.entries):
            vault.add(
                f"token-{index}", "token", {"token": SecretBytes(os.urandom(24).hex().encode())}
            )
        size = store.path.stat().st_size

        unlock = timed(lambda: store.unlock(SecretBytes(PASSPHRASE)).lock(), options.rounds)
        kdf = timed(bare_kdf, options.rounds)

        counter = iter(range(10**9))
        add = timed(
            lambda: vault.add(f"extra-{next(counter)}", "token", {"token": SecretBytes(b"x" * 40)}),
            options.rounds * 4,
        )
        key = AESGCM.generate_key(256)
        payload = os.urandom(size)
        bare_path = base / "bare.bin"

        def bare_write() -> None:
            ciphertext = AESGCM(key).encrypt(os.urandom(12), payload, b"header")
            fd = os.open(bare_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, ciphertext)
            os.fsync(fd)
            os.close(fd)

        bare = timed(bare_write, options.rounds * 4)
        listing = timed(vault.entries, options.rounds * 20)
        vault.lock()

    print(
        f"vault: {options.entries} entries, {size} bytes; KDF argon2id "
        f"{PRODUCTION_KDF.memory_kib} KiB x {PRODUCTION_KDF.iterations} passes x "
        f"{PRODUCTION_KDF.lanes} lane"
    )
    print(
        f"unlock (production KDF)     {unlock * 1000:8.1f} ms   bare Argon2id {kdf * 1000:8.1f} ms"
        f"   ratio {unlock / kdf:5.2f}"
    )
    print(
        f"add (atomic, durable save)  {add * 1000:8.2f} ms   bare AES-GCM+write+fsync "
        f"{bare * 1000:6.2f} ms   ratio {add / bare:5.2f}"
    )
    print(f"list (unlocked, in memory)  {listing * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
