"""The OAuth grants the gateway holds: access tokens in memory, one refresh at a time per grant.

The vault keeps each grant's refresh token; an access token is minted from it when an action
needs one and the cached one is missing or within :data:`REFRESH_BEFORE_S` of its expiry (half
the life of a token that lives less than twice that), and again once after the service
answered 401. A per-grant lock makes the refresh single-flight: twenty actions that find the
token expired at once wait for one refresh and use its result, so a rotating refresh token is
never spent twice. A rotated refresh token is saved to the vault
(an atomic save) before the new access token is handed to anyone: a crash after the save loses
only the access token, never the grant. A refresh the provider refuses as ``invalid_grant``
marks the grant dead: it is not asked again until a human reconnects it (`sp oauth connect`),
and `sp status` / `sp doctor` name it. Journal records name the grant, its issuer and scopes,
never a token.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.oauth.errors import OAuthGrantDead
from safeport.action_gateway.oauth.grant_issuer import check_issuer
from safeport.action_gateway.oauth.refresh_rules import (
    REFRESH_BEFORE_S as REFRESH_BEFORE_S,
)
from safeport.action_gateway.oauth.refresh_rules import entry_value, renew_at
from safeport.action_gateway.oauth.refresh_rules import rotated as was_rotated
from safeport.errors import Error
from safeport.shared.audit import JournalBody, JournalHead
from safeport.vault import VaultLocked
from safeport.vault.interface import UnlockedVault
from safeport.vault.secrets import OAuthSecret, SecretBytes, TokenSecret


class FreshTokens(Protocol):
    """A token endpoint's answer (``oauth.protocol.TokenGrant`` is one)."""

    @property
    def access_token(self) -> SecretBytes: ...

    @property
    def refresh_token(self) -> SecretBytes | None: ...

    @property
    def expires_in(self) -> int | None: ...

    @property
    def scopes(self) -> tuple[str, ...] | None: ...


class GrantClient(Protocol):
    """The provider's side of one grant (``oauth.client.OAuthClient`` is one). A refusal of the
    grant itself (``invalid_grant``) is :class:`OAuthGrantDead`; any other failure is any other
    :class:`~safeport.errors.Error`."""

    def refresh(
        self, refresh_token: SecretBytes, client_secret: SecretBytes | None
    ) -> FreshTokens: ...

    def revoke(
        self,
        token: SecretBytes,
        hint: Literal["refresh_token", "access_token"],
        client_secret: SecretBytes | None,
    ) -> bool:
        """RFC 7009; False when the provider has no revocation endpoint."""
        ...


class Journal(Protocol):
    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead: ...


# How a vault save is journaled with the generation it reached (the core's ``record_save``).
SaveRecorder = Callable[[str, JournalBody, UnlockedVault], None]


@dataclass(frozen=True)
class DeadGrant:
    """A grant its provider refused: named by `sp status` and `sp doctor` until reconnected."""

    name: str
    issuer: str | None
    since: float  # wall clock
    reason: str


@dataclass(frozen=True, repr=False)
class Access:
    """An access token for one action (its own copy: the executor wipes it) and the refresh it
    came from, so a 401 refreshes only if no other action already did."""

    secret: TokenSecret
    generation: int

    def __repr__(self) -> str:
        return f"Access(generation={self.generation}, <redacted>)"


class _Grant:
    def __init__(self) -> None:
        self.lock = threading.RLock()  # re-entered: connected() inside holding()
        self.token: SecretBytes | None = None
        self.renew_at: float | None = None  # monotonic; None: the provider gave no expiry
        self.generation = 0
        self.dead: DeadGrant | None = None
        # The client the token came from: a policy that changed the grant's provider gives a
        # new client, and a token of the old provider is then not used.
        self.client: object | None = None

    def drop_token(self) -> None:
        if self.token is not None:
            self.token.wipe()
        self.token = None
        self.renew_at = None


class GrantBroker:
    """The grants' in-memory state; every method is safe to call from many worker threads."""

    def __init__(
        self,
        journal: Journal,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._journal = journal
        self._clock = clock
        self._wall = wall
        self._grants: dict[str, _Grant] = {}
        self._mutex = threading.Lock()
        # The vault being (or last) locked: an action that opened it before the lock gets no
        # access token minted from it after forget() wiped the others.
        self._locked: UnlockedVault | None = None
        # Set by the core: a rotation is a vault save like any other, journaled with its
        # generation so that a vault file put back from before it shows as a rollback.
        self.record_save: SaveRecorder | None = None

    def access(self, name: str, client: GrantClient, vault: UnlockedVault) -> Access:
        """A valid access token for grant ``name``, refreshed first when it is near expiry."""
        grant = self._grant(name)
        with grant.lock:
            self._refuse_dead(grant)
            self._refuse_locked(grant, vault)
            if grant.client is not client:
                grant.drop_token()
            if grant.token is None or not self._fresh(grant):
                self._renew(name, grant, client, vault)
            return self._lease(grant, vault)

    def after_unauthorized(
        self, name: str, client: GrantClient, vault: UnlockedVault, used: Access
    ) -> Access:
        """A new token after the service refused ``used`` (401): refreshed once, unless another
        action refreshed meanwhile, whose token is then given instead."""
        grant = self._grant(name)
        with grant.lock:
            self._refuse_dead(grant)
            self._refuse_locked(grant, vault)
            if grant.generation == used.generation or grant.token is None:
                grant.drop_token()
                self._renew(name, grant, client, vault, unauthorized=True)
            return self._lease(grant, vault)

    def connected(
        self,
        name: str,
        token: SecretBytes | None = None,
        expires_in: int | None = None,
        client: object | None = None,
    ) -> None:
        """A human connected ``name`` anew: forget its old token and its death; ``token`` (the
        connect's own access token, taken over) serves the first actions."""
        grant = self._grant(name)
        with grant.lock:
            grant.drop_token()
            grant.dead = None
            grant.generation += 1
            if token is not None:
                grant.token, grant.client = token, client
                grant.renew_at = renew_at(self._clock(), expires_in)

    def dead(self) -> list[DeadGrant]:
        """The grants their providers refused, by name."""
        with self._mutex:
            grants = list(self._grants.values())
        return sorted((g.dead for g in grants if g.dead is not None), key=lambda d: d.name)

    def locking(self, vault: UnlockedVault) -> None:
        """``vault`` is being locked (called before :meth:`forget`): from now on no token
        minted from it is kept or handed out."""
        with self._mutex:
            self._locked = vault

    def forget(self, name: str | None = None) -> None:
        """Wipe the access tokens (all of them: the vault was locked; or one: it was removed)."""
        with self._mutex:
            grants = dict(self._grants)
            if name is not None:
                self._grants.pop(name, None)
        for grant_name, grant in grants.items():
            if name is None or grant_name == name:
                with grant.lock:
                    grant.drop_token()

    @contextlib.contextmanager
    def holding(self, name: str) -> Iterator[None]:
        """No refresh of grant ``name`` runs while the block does (its revocation at removal, a
        connect's save: a rotation saved meanwhile would leave a live token behind, or undo it)."""
        grant = self._grant(name)
        with grant.lock:
            yield

    # -- internals ------------------------------------------------------------------------------

    def _grant(self, name: str) -> _Grant:
        with self._mutex:
            return self._grants.setdefault(name, _Grant())

    def _fresh(self, grant: _Grant) -> bool:
        return grant.renew_at is None or self._clock() < grant.renew_at

    def _lease(self, grant: _Grant, vault: UnlockedVault) -> Access:
        # Again after a refresh, which may have run while the vault was being locked (its
        # rotation saved if the vault was still open): no token is kept past that lock.
        self._refuse_locked(grant, vault)
        assert grant.token is not None
        return Access(TokenSecret(grant.token.copy()), grant.generation)

    def _refuse_locked(self, grant: _Grant, vault: UnlockedVault) -> None:
        if vault is self._locked:
            grant.drop_token()
            raise VaultLocked()

    def _refuse_dead(self, grant: _Grant) -> None:
        if grant.dead is not None:
            raise dead_error(grant.dead.name)

    def _renew(
        self,
        name: str,
        grant: _Grant,
        client: GrantClient,
        vault: UnlockedVault,
        *,
        unauthorized: bool = False,
    ) -> None:
        stored = vault.secret(name)
        if not isinstance(stored, OAuthSecret):
            stored.wipe()
            raise ActionError("auth_failed", f"credential {name!r} is not an OAuth grant")
        try:
            check_issuer(name, client, stored)
            grant.client = client
            if stored.refresh_token is None:
                self._lasting(name, grant, stored, unauthorized)
            else:
                self._refresh(name, grant, client, vault, stored, stored.refresh_token)
        finally:
            stored.wipe()

    def _lasting(self, name: str, grant: _Grant, stored: OAuthSecret, unauthorized: bool) -> None:
        """A grant with no refresh token: its access token is all there is; a 401 on it means
        the provider no longer honours it."""
        if stored.access_token is None or unauthorized:
            self._die(name, grant, stored, "the service refused its access token")
        assert stored.access_token is not None
        grant.token = stored.access_token.copy()
        grant.renew_at = None
        grant.generation += 1

    def _refresh(
        self,
        name: str,
        grant: _Grant,
        client: GrantClient,
        vault: UnlockedVault,
        stored: OAuthSecret,
        refresh_token: SecretBytes,
    ) -> None:
        started = self._clock()
        try:
            fresh = client.refresh(refresh_token, stored.client_secret)
        except Error as exc:
            if isinstance(exc, OAuthGrantDead):
                self._die(name, grant, stored, "its provider refused the refresh token")
            self._journal.record(
                "oauth.refresh_failed", {**_about(name, stored), "reason": exc.message}
            )
            raise ActionError(
                "auth_failed",
                f"the OAuth grant {name!r} could not be refreshed: {exc.message}",
            ) from None
        try:
            rotated = was_rotated(refresh_token, fresh.refresh_token)
            scopes = stored.scopes if fresh.scopes is None else fresh.scopes
            if rotated or scopes != stored.scopes:
                # Saved before the new access token is used: a crash between the provider's
                # answer and this save is the one moment a rotated grant can be lost.
                vault.rotate(name, entry_value(stored, fresh.refresh_token, scopes))
                if self.record_save is not None:
                    self.record_save("vault.entry_rotated", {"name": name}, vault)
        except BaseException:
            fresh.access_token.wipe()
            raise
        finally:
            if fresh.refresh_token is not None:
                fresh.refresh_token.wipe()
        grant.drop_token()
        grant.token = fresh.access_token
        grant.renew_at = renew_at(started, fresh.expires_in)
        grant.generation += 1
        body = {**_about(name, stored), "scopes": list(scopes), "rotated": rotated}
        body["expires_in"] = fresh.expires_in
        self._journal.record("oauth.refreshed", body)

    def _die(self, name: str, grant: _Grant, stored: OAuthSecret, reason: str) -> None:
        grant.drop_token()
        grant.dead = DeadGrant(name, stored.issuer, self._wall(), reason)
        self._journal.record("oauth.grant_dead", {**_about(name, stored), "reason": reason})
        raise dead_error(name)


def dead_error(name: str) -> ActionError:
    # The remedy is in the message itself: the agent's refusal and the card carry the message.
    return ActionError(
        "oauth_grant_dead",
        f"the OAuth grant {name!r} was refused by its provider (revoked or expired);"
        f" a human reconnects it with `sp oauth connect {name}`",
    )


def _about(name: str, stored: OAuthSecret) -> dict[str, object]:
    return {"grant": name, "issuer": stored.issuer, "scopes": list(stored.scopes)}
