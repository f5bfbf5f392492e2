"""What every endpoint of the authorization server shares: the signing key, the client book,
the token ledger, the settings and the journal, all live only while the vault is unlocked.

With the vault locked there is no key: no token is issued, refreshed or honoured (``check``
answers inactive), and :class:`~safeport.vault.VaultLocked` says why. A lock forgets every
code and refresh family; the client book (approvals, revocations) stays on disk.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from safeport.action_gateway.remote_clients.client_book import ClientBook
from safeport.action_gateway.remote_clients.signing_key import (
    ENTRY_NAME,
    SigningKey,
    new_seed,
    seed_from_entry,
)
from safeport.action_gateway.remote_clients.token_ledger import Binding, Family, TokenLedger
from safeport.shared.audit import JournalBody
from safeport.shared.schemas.oauth_wire import AccessClaims
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import SecretBytes, TokenSecret

BOOK_FILE = "remote_clients.json"
MAX_ACCESS_MINUTES = 10


class VaultAccess(Protocol):
    def current(self) -> tuple[UnlockedVault, int]: ...

    def add_signing_key(self, seed: SecretBytes) -> None: ...


Journal = Callable[[str, JournalBody], None]


@dataclass(frozen=True)
class IssuedTokens:
    """What one grant issues (the token response carries it): the tokens stay out of reprs."""

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_in: int  # seconds


@dataclass(frozen=True)
class IssuerSettings:
    access_minutes: int = MAX_ACCESS_MINUTES
    actions: bool = False


class Issuer:
    def __init__(
        self,
        vault: VaultAccess,
        data_dir: Path,
        journal: Journal,
        settings: Callable[[], IssuerSettings],
        *,
        clock: Callable[[], float] = time.time,
        ended: Callable[[], None] = lambda: None,
    ) -> None:
        self._vault = vault
        self._data_dir = data_dir
        self.journal = journal
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()
        self._create = threading.Lock()
        self._epoch: int | None = None
        self._key: SigningKey | None = None
        self._book: ClientBook | None = None
        self.ledger = TokenLedger(clock, lambda message: self.key().sign_bytes(message), ended)

    def key(self) -> SigningKey:
        """The signing key of the unlocked vault (made on first use); VaultLocked otherwise."""
        vault, epoch = self._vault.current()
        with self._lock:
            if self._key is not None and self._epoch == epoch:
                return self._key
        with self._create:  # two first requests at once must not make two keys
            if not any(entry.name == ENTRY_NAME for entry in vault.entries()):
                self._vault.add_signing_key(SecretBytes(new_seed().encode("ascii")))
                self.journal("oauth.signing_key_created", {"entry": ENTRY_NAME})
        secret = vault.secret(ENTRY_NAME)
        if not isinstance(secret, TokenSecret):
            raise ValueError("the signing key entry is not a token entry")
        key = SigningKey.from_seed(seed_from_entry(secret.token.reveal()))
        with self._lock:
            if self._epoch != epoch:
                self.ledger.forget_all()  # a lock came between: nothing before it stands
                self._book = None
            self._key, self._epoch = key, epoch
        return key

    def book(self) -> ClientBook:
        key = self.key()
        with self._lock:
            if self._book is None:
                self._book = ClientBook(self._data_dir / BOOK_FILE, key.mac_key(b"clients"))
                if self._book.tampered:
                    self.journal("oauth.client_book_untrusted", {"alarm": True})
            return self._book

    def locked(self) -> None:
        """The vault locked: forget the key and everything issued."""
        with self._lock:
            self._key = None
            self._book = None
            self._epoch = None
        self.ledger.forget_all()

    def access_minutes(self) -> int:
        return max(1, min(MAX_ACCESS_MINUTES, self.settings().access_minutes))

    def issue(self, family: Family) -> IssuedTokens:
        """An access token and a new refresh token for ``family``."""
        key = self.key()
        binding: Binding = family.binding
        now = int(self.clock())
        lifetime = self.access_minutes() * 60
        claims = AccessClaims(
            iss=binding.issuer,
            aud=binding.resource,
            sub=binding.client_id,
            exp=now + lifetime,
            iat=now,
            jti=secrets.token_urlsafe(18),
            sp_roots=list(binding.roots),
            sp_profile="agent" if binding.profile == "agent" else "reader",
            sp_client=binding.client_name,
        )
        access = key.sign(claims)
        self.ledger.issued(family, claims.jti, float(claims.exp))
        refresh = self.ledger.next_refresh(family)
        return IssuedTokens(access_token=access, refresh_token=refresh, expires_in=lifetime)
