"""A grant connected at one provider is never refreshed or revoked at another: after a policy
that names another issuer for the grant is accepted, its next action fails before the refresh
token or the client secret is sent anywhere, naming `sp oauth connect`; the same provider (or a
reconnect) still serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.shared.schemas.config import GatewayPolicy
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.ladder.test_ladder_oauth import CLIENT_SECRET, REFRESH, OAuthRig
from tests.action_gateway.oauth.test_broker import _Provider

SUBJECT = "safeport.action_gateway.ladder"

CONNECTED_AT = "https://idp.example"


class _NamedProvider(_Provider):
    """The provider stand-in, knowing its issuer as the real client does after discovery."""

    def __init__(self, issuer: str | None) -> None:
        super().__init__()
        self.issuer = issuer
        self.seen: list[bytes] = []

    def endpoints(self) -> Endpoints:
        token = f"{self.issuer or 'https://other.example'}/token"
        return Endpoints(
            self.issuer, None, token, None, None, False, frozenset(), "none", ("deploy:read",)
        )

    def refresh(self, refresh_token: SecretBytes, client_secret: SecretBytes | None):  # type: ignore[no-untyped-def]
        self.seen.append(refresh_token.reveal())
        if client_secret is not None:
            self.seen.append(client_secret.reveal())
        return super().refresh(refresh_token, client_secret)


def _rig(tmp_path: Path) -> OAuthRig:
    rig = OAuthRig(tmp_path)
    vault, _ = rig.vault.current()
    value: dict[str, SecretBytes | str] = {
        "refresh_token": SecretBytes(REFRESH),
        "client_secret": SecretBytes(CLIENT_SECRET),
        "scopes": "deploy:read",
        "issuer": CONNECTED_AT,
    }
    vault.rotate("deploy-token", value)
    return rig


@pytest.mark.parametrize(
    "now", ["https://evil.example", "https://idp.example/", "https://IDP.example", None]
)
def test_a_grant_is_not_refreshed_at_another_issuer_than_it_was_connected_at(
    tmp_path: Path, now: str | None
) -> None:
    rig = _rig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-1"}
    rig.propose()  # served by its own provider: the token is cached
    other = _NamedProvider(now)

    def clients(policy: GatewayPolicy, name: str) -> _NamedProvider:
        return other

    rig.supply.grant_clients = clients  # the accepted policy now names another provider
    refusal = rig.refused()
    assert "sp oauth connect deploy-token" in refusal.reason
    assert other.seen == [] and other.calls == 0
    assert rig.sent == [b"CANARY-ACCESS-1"]  # nor was the old access token sent again


def test_a_grant_is_refreshed_at_the_issuer_it_was_connected_at(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    same = _NamedProvider(CONNECTED_AT)

    def clients(policy: GatewayPolicy, name: str) -> _NamedProvider:
        return same

    rig.supply.grant_clients = clients
    rig.valid = {b"CANARY-ACCESS-1"}
    assert rig.propose().model_dump()["fields"] == {"state": "ok"}
    assert same.seen == [REFRESH, CLIENT_SECRET]
