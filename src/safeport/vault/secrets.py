"""Secret values in memory: mutable buffers that redact themselves and can be wiped.

Python cannot promise that no copy of a secret survives (the interpreter copies bytes freely);
keeping values in ``bytearray``s that are zeroed on lock narrows the window and keeps them out of
reprs, logs and exception texts. docs/security/vault.md states the limits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

SecretKind = Literal["token", "basic", "ssh-key", "oauth"]


class SecretBytes:
    """A secret byte string that never shows itself in ``repr``/``str`` and can be zeroed."""

    __slots__ = ("_buf",)

    def __init__(self, value: bytes | bytearray | memoryview) -> None:
        self._buf = bytearray(value)

    def reveal(self) -> bytes:
        """A copy for the one call that needs it (an executor); do not keep it."""
        return bytes(self._buf)

    @contextlib.contextmanager
    def exposed(self) -> Iterator[memoryview]:
        """A read-only view of the value for one library call (a KDF, a key loader).

        Unlike :meth:`reveal` it makes no immutable copy that outlives ``wipe()``; the view is
        released when the block ends, so a callee that kept it cannot read it later.
        """
        with memoryview(self._buf) as whole, whole.toreadonly() as view:
            yield view

    def __len__(self) -> int:
        return len(self._buf)

    def copy(self) -> SecretBytes:
        """An independent buffer with the same value, made without an immutable ``bytes`` copy."""
        return SecretBytes(self._buf)

    def copy_into(self, target: memoryview) -> None:
        """Write the value into ``target`` (exactly ``len(self)`` bytes), e.g. a payload buffer."""
        target[:] = self._buf

    def wipe(self) -> None:
        for index in range(len(self._buf)):
            self._buf[index] = 0
        self._buf = bytearray()

    def __repr__(self) -> str:
        return "SecretBytes(<redacted>)"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("secrets cannot be pickled")

    def __eq__(self, other: object) -> bool:
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, repr=False)
class TokenSecret:
    token: SecretBytes

    def wipe(self) -> None:
        self.token.wipe()

    def __repr__(self) -> str:
        return "TokenSecret(<redacted>)"


@dataclass(frozen=True, repr=False)
class BasicSecret:
    username: str
    password: SecretBytes

    def wipe(self) -> None:
        self.password.wipe()

    def __repr__(self) -> str:
        return f"BasicSecret(username={self.username!r}, password=<redacted>)"


@dataclass(frozen=True, repr=False)
class SshKeySecret:
    """An OpenSSH/PEM private key, and the key's own passphrase when it has one."""

    private_key: SecretBytes
    passphrase: SecretBytes | None = None
    # An OpenSSH certificate for the key (public: a per-action key signed by an SSH CA).
    certificate: bytes | None = None

    def wipe(self) -> None:
        self.private_key.wipe()
        if self.passphrase is not None:
            self.passphrase.wipe()

    def __repr__(self) -> str:
        return "SshKeySecret(<redacted>)"


@dataclass(frozen=True, repr=False)
class OAuthSecret:
    """An OAuth grant the gateway holds: the refresh token (or, for a provider that issues
    only a non-expiring access token, that token), the client secret of a confidential client,
    and the scopes the provider granted and its issuer (plain: shown by `sp vault list`)."""

    refresh_token: SecretBytes | None
    access_token: SecretBytes | None = None
    client_secret: SecretBytes | None = None
    scopes: tuple[str, ...] = ()
    issuer: str | None = None

    def wipe(self) -> None:
        for value in (self.refresh_token, self.access_token, self.client_secret):
            if value is not None:
                value.wipe()

    def __repr__(self) -> str:
        return f"OAuthSecret(scopes={self.scopes!r}, <redacted>)"


CredentialSecret = TokenSecret | BasicSecret | SshKeySecret | OAuthSecret
