"""An action on an oauth credential through the in-process ladder: it runs with an access token
from the broker, a 401 brings one refresh and one retry (never a loop), a dead grant fails the
action naming `sp oauth connect`, and neither the access token nor the grant's refresh token or
client secret reaches the agent's result."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import pytest

from harness.gateway import POLICY
from safeport.action_gateway.approvals.cards import ApprovalCard
from safeport.action_gateway.executors.interface import HttpAction
from safeport.action_gateway.ladder.credentials import local_only
from safeport.action_gateway.ladder.rungs import Ladder
from safeport.action_gateway.oauth.broker import GrantClient
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.wire import HttpResult
from safeport.vault.secrets import BasicSecret, SecretBytes, TokenSecret
from tests.action_gateway.ladder.test_ladder_rungs import Policies, Rig
from tests.action_gateway.oauth.test_broker import _Journal, _Provider, _refused

SUBJECT = "safeport.action_gateway.ladder"

REFRESH = b"CANARY-REFRESH-of-the-first-grant"
# The rig's policy with deploy-token an OAuth grant (an approval per call: a card each time).
OAUTH_POLICY = POLICY.replace(
    '[credentials.deploy-token]\nkind = "token"\napproval = "session"\n',
    '[credentials.deploy-token]\nkind = "oauth"\napproval = "per-call"\n'
    '[credentials.deploy-token.oauth]\nissuer = "https://idp.example"\nclient_id = "safeport"\n'
    'scopes = ["deploy:read"]\n',
)
CLIENT_SECRET = b"CANARY-CLIENT-SECRET"


class OAuthRig(Rig):
    """The rig with ``deploy-token`` held as an OAuth grant, answered by a provider stand-in,
    and a service that accepts only the access tokens listed in ``valid``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.policies = Policies(OAUTH_POLICY)
        vault, _ = self.vault.current()
        vault.remove("deploy-token")
        value: dict[str, SecretBytes | str] = {
            "refresh_token": SecretBytes(REFRESH),
            "scopes": "deploy:read",
        }
        vault.add("deploy-token", "oauth", {**value, "client_secret": SecretBytes(CLIENT_SECRET)})
        self.provider = _Provider()
        self.valid: set[bytes] = set()
        self.fields: dict[str, object] = {"state": "ok"}
        self.sent: list[bytes] = []
        self.supply = local_only()
        self.supply.grant_clients = self._client
        self.supply.journal = self.oauth_journal = _Journal()
        self.supply.grants._journal = self.oauth_journal
        rig = self

        def http_request(action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
            assert isinstance(secret, TokenSecret)
            rig.sent.append(secret.token.reveal())
            if secret.token.reveal() not in rig.valid:
                return HttpResult(status=401, fields={})
            return HttpResult(status=200, fields=dict(rig.fields))

        self.executor.http_request = http_request  # type: ignore[method-assign]

    def _client(self, policy: GatewayPolicy, name: str) -> GrantClient:
        assert name == "deploy-token"
        return self.provider

    def ladder(self) -> Ladder:
        return dataclasses.replace(super().ladder(), credentials=self.supply)


def test_an_action_runs_with_the_grants_access_token(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-1"}
    assert rig.propose().model_dump()["fields"] == {"state": "ok"}
    assert rig.sent == [b"CANARY-ACCESS-1"] and rig.provider.calls == 1
    rig.propose()
    assert rig.provider.calls == 1  # the cached token serves the next action


def test_a_401_brings_one_refresh_and_one_retry(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-1"}
    rig.propose()
    rig.valid = {b"CANARY-ACCESS-2"}  # the provider revoked the first token early
    assert rig.propose().model_dump()["fields"] == {"state": "ok"}
    assert rig.sent == [b"CANARY-ACCESS-1", b"CANARY-ACCESS-1", b"CANARY-ACCESS-2"]
    assert rig.provider.calls == 2


def test_a_service_that_refuses_every_token_is_asked_twice_not_in_a_loop(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    result = rig.propose()
    assert result.model_dump()["status"] == 401
    assert rig.sent == [b"CANARY-ACCESS-1", b"CANARY-ACCESS-2"] and rig.provider.calls == 2


def test_a_dead_grant_fails_the_action_naming_the_command_that_reconnects_it(
    tmp_path: Path,
) -> None:
    rig = OAuthRig(tmp_path)
    rig.provider.refuse = _refused("invalid_grant")
    # Found dead while running; from then on, before any card is shown.
    for category in ("upstream_oauth_grant_dead", "oauth_grant_dead", "oauth_grant_dead"):
        refusal = rig.refused()
        assert refusal.category == category
        assert "sp oauth connect deploy-token" in refusal.reason
    assert rig.provider.calls == 1 and rig.sent == []
    assert [kind for kind, _ in rig.oauth_journal.records] == ["oauth.grant_dead"]


@pytest.mark.parametrize(
    "leak",
    [
        "CANARY-ACCESS-1",
        base64.b64encode(b"CANARY-ACCESS-1").decode(),
        REFRESH.decode(),
        REFRESH.hex().upper(),
        {"nested": [CLIENT_SECRET.decode()]},
        "Bearer CANARY-ACCESS-2",  # the token after a 401's refresh
    ],
)
def test_a_result_holding_a_token_of_the_grant_is_withheld_whole(
    tmp_path: Path, leak: object
) -> None:
    rig = OAuthRig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-2"}
    rig.fields = {"state": leak}
    refusal = rig.refused()
    assert (refusal.code, refusal.category) == ("upstream", "upstream_bad_response")
    assert "CANARY" not in str(rig.journal.records) + str(rig.oauth_journal.records)


def test_a_result_without_a_token_is_served_after_a_retry(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-2"}
    rig.fields = {"state": "CANARY-ACCESS-3 is a token the grant never had"}
    assert rig.propose().model_dump()["fields"] == rig.fields


def test_the_card_names_the_grant_and_the_scopes_it_was_granted(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    rig.valid = {b"CANARY-ACCESS-1"}
    cards: list[ApprovalCard] = []
    rig.approvals.on_card_opened(cards.append)
    rig.propose()
    assert ("oauth grant", "acts as deploy-token with scopes deploy:read") in cards[0].fields


def test_a_dead_grant_gets_no_card(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    rig.provider.refuse = _refused("invalid_grant")
    rig.refused()
    rig.events.clear()
    refusal = rig.refused()
    assert refusal.category == "oauth_grant_dead" and "card" not in rig.events


def test_a_grant_never_connected_gets_no_card(tmp_path: Path) -> None:
    rig = OAuthRig(tmp_path)
    vault, _ = rig.vault.current()
    vault.remove("deploy-token")
    rig.events.clear()
    refusal = rig.refused()
    assert refusal.category == "oauth_not_connected" and "card" not in rig.events
    assert "sp oauth connect deploy-token" in refusal.reason
