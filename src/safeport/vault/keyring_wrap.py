"""A second wrap of the data key whose key lives in the OS keyring (optional).

The vault header holds the data key encrypted under a random 256-bit "keyring key"; the OS
keyring (macOS Keychain, Secret Service, Windows Credential Locker) holds that keyring key under
the vault's id. Unlocking with it needs no passphrase, which is the whole trade: on Linux any
process of the same user can ask Secret Service for the item while the login keyring is open,
and with it decrypt the vault file. The keyring only unlocks; it never approves an action and
never accepts a policy (those need the passphrase).
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
from typing import Protocol

from safeport.vault.errors import KeyringProblem
from safeport.vault.kdf import KEY_BYTES

SERVICE = "safeport-vault"

LINUX_TRADE_OFF = (
    "On Linux, any program running as your user can ask the Secret Service for this key while "
    "your login keyring is unlocked, and so decrypt the vault file without the passphrase. "
    "The keyring only unlocks: approving actions and accepting a policy still need the passphrase."
)
OTHER_TRADE_OFF = (
    "Anyone who can use your unlocked OS account can unlock the vault without the passphrase. "
    "The keyring only unlocks: approving actions and accepting a policy still need the passphrase."
)


def trade_off(platform: str | None = None) -> str:
    """What enabling keyring unlock gives away on this platform (printed by `sp vault keyring`)."""
    platform = sys.platform if platform is None else platform
    return LINUX_TRADE_OFF if platform.startswith("linux") else OTHER_TRADE_OFF


class KeyringBackend(Protocol):
    """Where the keyring key is kept; :class:`OsKeyring` in production."""

    def get(self, account: str) -> str | None: ...

    def set(self, account: str, value: str) -> None: ...

    def delete(self, account: str) -> None: ...


class OsKeyring:
    """The ``keyring`` package's default backend; its errors become :class:`KeyringProblem`."""

    def get(self, account: str) -> str | None:
        import keyring

        try:
            value = keyring.get_password(SERVICE, account)
        except Exception as exc:  # a backend's own errors (D-Bus, Keychain) are foreign too
            raise KeyringProblem(_why("read from", exc)) from exc
        return value if isinstance(value, str) else None

    def set(self, account: str, value: str) -> None:
        import keyring

        try:
            keyring.set_password(SERVICE, account, value)
        except Exception as exc:
            raise KeyringProblem(_why("store a key in", exc)) from exc

    def delete(self, account: str) -> None:
        import keyring
        import keyring.errors

        try:
            keyring.delete_password(SERVICE, account)
        except keyring.errors.PasswordDeleteError:
            return  # already gone: disabling is idempotent
        except Exception as exc:
            raise KeyringProblem(_why("delete a key from", exc)) from exc


def new_keyring_key() -> bytearray:
    return bytearray(os.urandom(KEY_BYTES))


def encode_keyring_key(key: bytearray) -> str:
    # The keyring API takes str; that copy cannot be zeroed (docs/security/vault.md).
    return base64.b64encode(key).decode("ascii")


def decode_keyring_key(value: str) -> bytearray:
    try:
        key = bytearray(base64.b64decode(value, validate=True))
    except (ValueError, binascii.Error) as exc:
        raise KeyringProblem("the OS keyring item for this vault is not a safeport key") from exc
    if len(key) != KEY_BYTES:
        raise KeyringProblem("the OS keyring item for this vault is not a safeport key")
    return key


def _why(action: str, exc: Exception) -> str:
    # Keyring errors name backends and D-Bus failures, never the stored value.
    return f"cannot {action} the OS keyring ({type(exc).__name__})"
