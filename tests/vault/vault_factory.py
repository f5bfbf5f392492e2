"""Build vaults for tests: real files, real crypto, with a cheap KDF passed explicitly."""

from __future__ import annotations

from pathlib import Path

from safeport.vault import KdfParams, OpenVault, VaultFile
from safeport.vault.secrets import SecretBytes, TokenSecret

# Explicitly weak: passed as a parameter, never picked up from the environment.
FAST_KDF = KdfParams(memory_kib=64, iterations=1, lanes=1)
PASSPHRASE = b"correct horse battery staple"
CANARY_TOKEN = b"CANARY-TOKEN-7f3a9c1e5b"
CANARY_PASSWORD = b"CANARY-PASSWORD-42d0e6a8"


class MemoryKeyring:
    """An in-memory KeyringBackend for unit tests (the real Secret Service has its own tests)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def get(self, account: str) -> str | None:
        return self.items.get(account)

    def set(self, account: str, value: str) -> None:
        self.items[account] = value

    def delete(self, account: str) -> None:
        self.items.pop(account, None)


def passphrase(value: bytes = PASSPHRASE) -> SecretBytes:
    return SecretBytes(value)


def make_vault(
    folder: Path, *, keyring: MemoryKeyring | None = None
) -> tuple[VaultFile, OpenVault]:
    """A vault at ``folder/vault.sp`` holding one token and one basic credential (canaries)."""
    store = VaultFile(folder / "vault.sp", keyring=keyring or MemoryKeyring())
    vault = store.create(passphrase(), kdf=FAST_KDF)
    vault.add("deploy-token", "token", {"token": SecretBytes(CANARY_TOKEN)})
    vault.add("registry", "basic", {"username": "ci", "password": SecretBytes(CANARY_PASSWORD)})
    return store, vault


def token_value(vault: OpenVault, name: str) -> bytes:
    """What the token entry ``name`` holds (the test fails if the entry is another kind)."""
    secret = vault.secret(name)
    assert isinstance(secret, TokenSecret)
    return secret.token.reveal()
