"""Codes, refresh-token families and issued access-token ids, in memory (hashes only).

- A code is used once and lives 60 s; bound to its client, redirect URI, PKCE challenge and
  resource. A second use of a code revokes every token issued from it (RFC 6749 §4.1.2).
- Each code that is redeemed starts a *family*: one refresh token at a time, rotated at every
  use; the use of a refresh token that was already rotated away revokes the whole family
  (whoever holds it, the thief or the client, is cut off; OAuth 2.1 §4.3.1).
- An access token is good only while its id was issued in this run of the gateway and its
  family stands: a restart forgets every family, so tokens issued before it stop being honoured
  and clients authorize again (a card again: see ``authorization``).

Only SHA-256 digests of codes and refresh tokens are kept, and compared in constant time. Each
code and refresh token carries the gateway's signature naming its client (``grant_tokens``) so
that the HTTP server can charge a token request to that client's rate bucket; the digest is of
the whole token, and the signature plays no part in whether the gateway honours it.

Every change that ends a standing access token (a family revoked or dropped, everything
forgotten) calls ``ended`` before the lock is released and before the caller can answer anyone:
the gateway replaces its revocation notice there (``revocation_notice``).
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from safeport.action_gateway.remote_clients.authorization_rules import token_digest
from safeport.shared.grant_tokens import Sign, mint

CODE_TTL_S = 60.0
MAX_CODES = 256
MAX_FAMILIES = 4096


@dataclass(frozen=True)
class Binding:
    """What a grant is for: the client as approved, and the resource and roots approved."""

    client_id: str
    client_name: str
    resource: str
    issuer: str
    roots: tuple[str, ...]
    profile: str


@dataclass(frozen=True)
class CodeRecord:
    binding: Binding
    redirect_uri: str
    code_challenge: str
    expires_at: float
    redirect_named: bool = True  # the token request must repeat the redirect URI (RFC 6749)
    used: bool = False
    family: str | None = None  # the family the code started, once redeemed


@dataclass
class Family:
    id: str
    binding: Binding
    refresh_digest: str
    rotated: set[str] = field(default_factory=set)
    access_ids: dict[str, float] = field(default_factory=dict)  # jti -> exp
    revoked: str | None = None


@dataclass(frozen=True)
class Redeemed:
    """A grant's outcome: the family to issue from, or why there is none."""

    family: Family | None
    problem: str | None = None  # "invalid_grant" and the like
    replayed_family: str | None = None  # a reuse that revoked this family
    spent: bool = False  # a code spent by a failed proof (PKCE): no later try may redeem it


class TokenLedger:
    def __init__(
        self, clock: Callable[[], float], sign: Sign, ended: Callable[[], None] = lambda: None
    ) -> None:
        self._clock = clock
        self._sign = sign
        self._ended = ended
        self._lock = threading.Lock()
        self._codes: dict[str, CodeRecord] = {}
        self._families: dict[str, Family] = {}
        self._by_refresh: dict[str, str] = {}  # refresh digest (current or rotated) -> family
        self._by_access: dict[str, str] = {}  # jti -> family

    def new_code(
        self, binding: Binding, redirect_uri: str, challenge: str, *, redirect_named: bool = True
    ) -> str:
        code = mint("code", binding.client_id, self._sign)
        with self._lock:
            self._expire()
            if len(self._codes) >= MAX_CODES:
                oldest = min(self._codes, key=lambda key: self._codes[key].expires_at)
                del self._codes[oldest]
            expires = self._clock() + CODE_TTL_S
            record = CodeRecord(binding, redirect_uri, challenge, expires, redirect_named)
            self._codes[token_digest(code)] = record
        return code

    def redeem_code(
        self,
        code: str,
        check: Callable[[CodeRecord], str | None],
        proves: Callable[[CodeRecord], bool] = lambda record: True,
    ) -> Redeemed:
        """Spend ``code`` if ``check`` finds nothing wrong with its record and the request
        ``proves`` it holds the code's verifier; a second use revokes what the first issued.

        A failed proof spends the code too (RFC 9700 4.8.2: a code whose PKCE check failed is
        treated as used): whoever holds a stolen code gets one guess at the verifier, and a
        later request with the right verifier is refused like any other second use."""
        digest = token_digest(code)
        with self._lock:
            self._expire()
            key = _find(self._codes, digest)
            record = self._codes.get(key) if key is not None else None
            if record is None:
                return Redeemed(None, "invalid_grant")
            if record.used:
                family = self._families.get(record.family or "")
                if family is not None and family.revoked is None:
                    family.revoked = "code replayed"
                    self._ended()
                return Redeemed(None, "invalid_grant", replayed_family=record.family)
            problem = check(record)
            if problem is not None:
                return Redeemed(None, problem)
            if not proves(record):
                self._codes[digest] = replace(record, used=True)
                return Redeemed(None, "invalid_grant", spent=True)
            family = self._start_family(record.binding)
            self._codes[digest] = replace(record, used=True, family=family.id)
            return Redeemed(family)

    def rotate(self, refresh_token: str, check: Callable[[Family], str | None]) -> Redeemed:
        digest = token_digest(refresh_token)
        with self._lock:
            key = _find(self._by_refresh, digest)
            family = self._families.get(self._by_refresh[key]) if key is not None else None
            if family is None or family.revoked is not None:
                return Redeemed(None, "invalid_grant")
            if not hmac.compare_digest(family.refresh_digest, digest):
                family.revoked = "refresh token reused"
                self._ended()
                return Redeemed(None, "invalid_grant", replayed_family=family.id)
            problem = check(family)
            if problem is not None:
                return Redeemed(None, problem)
            family.rotated.add(digest)
            # Spent now, under the lock: the next token is made only after signing, and a
            # second use of this one in between must be a reuse, not a second grant.
            family.refresh_digest = ""
            return Redeemed(family)

    def next_refresh(self, family: Family) -> str:
        """A new refresh token for ``family``; the one before it becomes a reuse tripwire."""
        token = mint("refresh", family.binding.client_id, self._sign)
        digest = token_digest(token)
        with self._lock:
            family.refresh_digest = digest
            self._by_refresh[digest] = family.id
        return token

    def issued(self, family: Family, jti: str, exp: float) -> None:
        with self._lock:
            family.access_ids[jti] = exp
            self._by_access[jti] = family.id

    def access_state(self, client_id: str, jti: str) -> str | None:
        """None if the access token ``jti`` of ``client_id`` stands, else why it does not."""
        with self._lock:
            family = self._families.get(self._by_access.get(jti, ""))
            if family is None or family.binding.client_id != client_id:
                return "unknown token"
            if family.revoked is not None:
                return "revoked"
            if family.access_ids.get(jti, 0.0) <= self._clock():
                return "expired"
            return None

    def revoke_token(self, token: str) -> Family | None:
        """RFC 7009: a refresh token (current or rotated) ends its family."""
        digest = token_digest(token)
        with self._lock:
            key = _find(self._by_refresh, digest)
            family = self._families.get(self._by_refresh[key]) if key is not None else None
            if family is not None and family.revoked is None:
                family.revoked = "revoked by the client"
                self._ended()
                return family
            return None

    def revoke_access(self, jti: str) -> Family | None:
        with self._lock:
            family = self._families.get(self._by_access.get(jti, ""))
            if family is not None and family.revoked is None:
                family.revoked = "revoked by the client"
                self._ended()
                return family
            return None

    def revoke_client(self, client_id: str) -> int:
        with self._lock:
            # Its codes not yet redeemed go too: one redeemed after the human lets the client
            # back in would otherwise start a family the revocation was meant to end.
            for key in [k for k, r in self._codes.items() if r.binding.client_id == client_id]:
                if not self._codes[key].used:
                    del self._codes[key]
            ended = 0
            for family in self._families.values():
                if family.binding.client_id == client_id and family.revoked is None:
                    family.revoked = "client revoked"
                    ended += 1
            self._ended()  # even with none here: the notice is what a revoke promises
            return ended

    def forget_all(self) -> None:
        """The vault locked: nothing issued before stays good."""
        with self._lock:
            self._codes.clear()
            self._families.clear()
            self._by_refresh.clear()
            self._by_access.clear()
            self._ended()

    # -- internals (the caller holds the lock) -------------------------------------------------

    def _start_family(self, binding: Binding) -> Family:
        if len(self._families) >= MAX_FAMILIES:
            self._drop_oldest_family()
        family = Family(id=secrets.token_hex(12), binding=binding, refresh_digest="")
        self._families[family.id] = family
        return family

    def _drop_oldest_family(self) -> None:
        victim = next(iter(self._families.values()))
        self._families.pop(victim.id)
        for table in (self._by_refresh, self._by_access):
            for key in [k for k, v in table.items() if v == victim.id]:
                del table[key]
        self._ended()

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, r in self._codes.items() if r.expires_at <= now and not r.used]:
            del self._codes[key]
        # A used code is kept for its lifetime and a little after, to see a replay.
        for key in [k for k, r in self._codes.items() if r.used and r.expires_at + 600 <= now]:
            del self._codes[key]


def _find(table: Mapping[str, object], digest: str) -> str | None:
    """The key equal to ``digest``. The dictionary lookup is by the digest of a 256-bit random
    value, so its timing tells a guesser nothing about any stored token; the final comparison is
    constant-time all the same."""
    for key in (digest,):
        if key in table and hmac.compare_digest(key, digest):
            return key
    return None
