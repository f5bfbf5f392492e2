"""What a refresh decides, without I/O (pure): when the next one is due, whether the provider
rotated the refresh token, and what the grant's vault entry holds after it."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from safeport.vault.secrets import OAuthSecret, SecretBytes

# Refresh this long before the provider's expiry: an action's request must not carry a token
# that expires while it is in flight.
REFRESH_BEFORE_S = 60


def renew_at(start: float, expires_in: int | None) -> float | None:
    # REFRESH_BEFORE_S ahead of the expiry, but never more than half the token's life: a token
    # that lives a minute or less would otherwise be stale as it arrives, and every action --
    # each of twenty waiting on the one refresh -- would refresh again, spending the grant.
    if expires_in is None:
        return None
    return start + expires_in - min(REFRESH_BEFORE_S, expires_in / 2)


def rotated(old: SecretBytes, new: SecretBytes | None) -> bool:
    if new is None:
        return False
    with old.exposed() as left, new.exposed() as right:
        return not hmac.compare_digest(left, right)


def entry_value(
    stored: OAuthSecret, refresh_token: SecretBytes | None, scopes: tuple[str, ...]
) -> Mapping[str, SecretBytes | str]:
    """The vault entry after a refresh: the rotated refresh token (or the same one), the same
    client secret and issuer, the scopes now granted."""
    value: dict[str, SecretBytes | str] = {"scopes": " ".join(scopes)}
    token = refresh_token if refresh_token is not None else stored.refresh_token
    if token is not None:
        value["refresh_token"] = token
    if stored.client_secret is not None:
        value["client_secret"] = stored.client_secret
    if stored.issuer is not None:
        value["issuer"] = stored.issuer
    return value
