"""A grant is refreshed and revoked only at the issuer it was connected at.

The vault entry of a grant names the issuer that gave it. An accepted policy may later name
another issuer for the same credential: the grant's refresh token and client secret were issued
by, and for, the first one, and posting them to the second would hand them to whoever runs it.
Such a grant is reconnected by a human instead. (A grant whose provider has no issuer -- a
preset with fixed endpoints -- is compared by that absence only.)
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.vault.secrets import OAuthSecret


@runtime_checkable
class ResolvesEndpoints(Protocol):
    """A client that knows its provider (``oauth.client.OAuthClient`` does)."""

    def endpoints(self) -> Endpoints: ...


def check_issuer(name: str, client: object, stored: OAuthSecret) -> None:
    """Refuse a client of another issuer than the one the grant was connected at: an accepted
    policy that now names another provider must not have the grant's refresh token and client
    secret sent to that provider's token or revocation endpoint; the grant is reconnected."""
    if not isinstance(client, ResolvesEndpoints):
        return
    issuer = client.endpoints().issuer
    if issuer != stored.issuer:
        was, now = stored.issuer or "(no issuer)", issuer or "(no issuer)"
        raise ActionError(
            "auth_failed",
            f"the OAuth grant {name!r} was connected at {was} and the policy now names {now};"
            f" a human reconnects it with `sp oauth connect {name}`",
        )
