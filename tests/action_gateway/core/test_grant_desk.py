"""Connecting, revoking and reporting OAuth grants through an in-process GatewayCore (a real vault
file, real journals, the accepted policy), with a provider stand-in that checks each callback
with the real protocol code: flows are one-shot, bound to their user, forgotten on lock; tokens
go to the vault and the broker, never into a result or a journal."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.oauth.client import CodeFlow
from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthRefused
from safeport.action_gateway.oauth.protocol import (
    DeviceAuthorization,
    DevicePending,
    TokenGrant,
    authorization_url,
    check_callback,
    new_pkce,
    new_state,
)
from safeport.errors import Error
from safeport.shared.audit import read_records
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.vault.errors import VaultLocked
from safeport.vault.secrets import OAuthSecret, SecretBytes
from tests.action_gateway.in_process_core import in_process_core
from tests.action_gateway.oauth.test_broker import _refused
from tests.vault.vault_factory import passphrase

ISSUER = "https://idp.example"
UID = 4242
POLICY = f"""
[credentials.tracker]
kind = "oauth"
approval = "per-call"
[credentials.tracker.oauth]
issuer = "{ISSUER}"
client_id = "safeport-test"
scopes = ["read", "write"]

[credentials.deploy-token]
kind = "token"
"""


@dataclass
class Provider:
    """Answers like an authorization server, the callback checked by the real check_callback."""

    device_answers: list[TokenGrant | DevicePending] = field(default_factory=list)
    polls: int = 0
    revoked: list[tuple[str, bytes]] = field(default_factory=list)
    revoke_fails: bool = False
    refuse_refresh: bool = False
    no_device: bool = False
    minted: int = 0

    def endpoints(self) -> Endpoints:
        return Endpoints(
            issuer=ISSUER,
            authorization=f"{ISSUER}/auth",
            token=f"{ISSUER}/token",
            device=f"{ISSUER}/device",
            revocation=f"{ISSUER}/revoke",
            iss_supported=True,
            quirks=frozenset(),
            client_auth="none",
            scopes=("read", "write"),
        )

    def begin_code(self, redirect_uri: str) -> CodeFlow:
        endpoints, pkce, state = self.endpoints(), new_pkce(), new_state()
        url = authorization_url(
            endpoints, "safeport-test", redirect_uri, endpoints.scopes, state, pkce.challenge
        )
        return CodeFlow(url, state, pkce, redirect_uri, endpoints.scopes, endpoints)

    def exchange_code(
        self, flow: CodeFlow, query: Mapping[str, str], client_secret: SecretBytes | None
    ) -> TokenGrant:
        code = check_callback(query, state=flow.state, issuer=ISSUER, iss_required=True)
        assert code.reveal() == b"the-code"
        return self.grant(("read",))

    def device_start(self, client_secret: SecretBytes | None) -> DeviceAuthorization:
        if self.no_device:
            raise OAuthBadResponse("the provider has no device authorization endpoint")
        return DeviceAuthorization(
            SecretBytes(b"CANARY-DEVICE-CODE"), "WDJB-MJHT", f"{ISSUER}/device", None, 1, 600
        )

    def device_poll(
        self, device: DeviceAuthorization, client_secret: SecretBytes | None
    ) -> TokenGrant | DevicePending:
        self.polls += 1
        return self.device_answers.pop(0)

    def refresh(self, refresh_token: SecretBytes, client_secret: SecretBytes | None) -> TokenGrant:
        if self.refuse_refresh:
            raise _refused("invalid_grant")
        return self.grant(None)

    def revoke(
        self,
        token: SecretBytes,
        hint: Literal["refresh_token", "access_token"],
        client_secret: SecretBytes | None,
    ) -> bool:
        if self.revoke_fails:
            raise OAuthBadResponse("the revocation endpoint answered HTTP 503")
        self.revoked.append((hint, token.reveal()))
        return True

    def grant(self, scopes: tuple[str, ...] | None, *, expires_in: int = 3600) -> TokenGrant:
        self.minted += 1
        return TokenGrant(
            SecretBytes(b"CANARY-ACCESS-%d" % self.minted),
            SecretBytes(b"CANARY-REFRESH-%d" % self.minted),
            expires_in,
            scopes,
            "Bearer",
        )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
def core(tmp_path: Path, provider: Provider) -> Iterator[GatewayCore]:
    def clients(policy: GatewayPolicy, name: str) -> Provider:
        return provider

    gateway, paths = in_process_core(tmp_path, grant_clients=clients)
    paths.gateway_config.parent.mkdir(parents=True, exist_ok=True)
    paths.gateway_config.write_text(POLICY, encoding="utf-8")
    try:
        gateway.prove_passphrase(passphrase())
        gateway.accept_policy(parse_gateway_policy(POLICY)[1], None)
        yield gateway
    finally:
        gateway.lock("test over")
        gateway.close()


def _actions(tmp_path: Path) -> list[dict[str, object]]:
    return read_records(tmp_path / "h" / "audit" / "actions.jsonl")


def _begin_code(core: GatewayCore, uid: int = UID) -> tuple[str, str]:
    begun = core.grants.begin(
        "tracker", uid, redirect_uri="http://127.0.0.1:5555/callback", device=False,
        client_secret=None,
    )  # fmt: skip
    assert begun.authorization_url is not None and begun.scopes == ["read", "write"]
    state = dict(p.split("=", 1) for p in begun.authorization_url.split("?", 1)[1].split("&"))
    return begun.flow_id, state["state"]


def test_a_code_flow_stores_the_grant_and_gives_sp_only_its_scopes(
    core: GatewayCore, provider: Provider, tmp_path: Path
) -> None:
    flow_id, state = _begin_code(core)
    done = core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    assert done.model_dump() == {"name": "tracker", "scopes": ["read"]}
    entry = next(e for e in core.entries() if e.name == "tracker")
    assert (entry.kind, entry.scopes) == ("oauth", ("read",))
    vault, _ = core._vault.current()
    stored = vault.secret("tracker")
    assert isinstance(stored, OAuthSecret) and stored.refresh_token is not None
    assert (stored.refresh_token.reveal(), stored.issuer) == (b"CANARY-REFRESH-1", ISSUER)
    assert stored.access_token is None  # access tokens live in memory only
    connected = [r for r in _actions(tmp_path) if r["kind"] == "oauth.connected"]
    assert len(connected) == 1 and "CANARY" not in json.dumps(_actions(tmp_path))
    # The connect's access token serves the first action: no refresh is needed for it.
    access = core._credentials.grants.access("tracker", provider, vault)
    assert access.secret.token.reveal() == b"CANARY-ACCESS-1" and provider.minted == 1


@pytest.mark.parametrize(
    "query",
    [
        {"code": "the-code", "state": "another-flows-state", "iss": ISSUER},
        {"code": "the-code", "iss": ISSUER},
        {"code": "the-code", "state": "STATE", "iss": "https://evil.example"},
        {"code": "the-code", "state": "STATE"},  # the provider sends iss: it must be there
        {"error": "access_denied", "state": "STATE", "iss": ISSUER},
    ],
)
def test_a_callback_that_is_not_this_flows_answer_stores_nothing_and_spends_the_flow(
    core: GatewayCore, query: dict[str, str]
) -> None:
    flow_id, state = _begin_code(core)
    query = {k: state if v == "STATE" else v for k, v in query.items()}
    with pytest.raises(OAuthRefused):
        core.grants.finish(flow_id, UID, query)
    assert all(e.name != "tracker" for e in core.entries())
    good = {"code": "the-code", "state": state, "iss": ISSUER}
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        core.grants.finish(flow_id, UID, good)


def test_a_flow_finishes_once_and_only_for_the_user_who_began_it(core: GatewayCore) -> None:
    flow_id, state = _begin_code(core)
    query = {"code": "the-code", "state": state, "iss": ISSUER}
    for stranger in (UID + 1, 0):
        with pytest.raises(OAuthRefused, match="no such connect flow"):
            core.grants.finish(flow_id, stranger, query)
    core.grants.finish(flow_id, UID, query)  # the stranger's tries did not spend it
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        core.grants.finish(flow_id, UID, query)
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        core.grants.finish("x" * 32, UID, query)


def test_a_lock_forgets_the_flows_under_way(core: GatewayCore) -> None:
    flow_id, state = _begin_code(core)
    core.lock("test")
    with pytest.raises(VaultLocked):
        _begin_code(core)
    core.prove_passphrase(passphrase())
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})


def test_only_an_oauth_credential_of_the_accepted_policy_can_be_connected(
    core: GatewayCore,
) -> None:
    for name in ("deploy-token", "undeclared"):
        with pytest.raises(Error, match="not an oauth credential of the accepted policy"):
            core.grants.begin(name, UID, redirect_uri=None, device=True, client_secret=None)


def test_a_device_flow_polls_at_the_providers_pace_and_stores_the_grant(
    core: GatewayCore, provider: Provider, tmp_path: Path
) -> None:
    clock = Clock()
    core.grants._clock, core.grants._sleep = clock, clock.sleep
    provider.device_answers = [DevicePending(False), DevicePending(True), provider.grant(None)]
    provider.minted = 0
    begun = core.grants.begin("tracker", UID, redirect_uri=None, device=True, client_secret=None)
    assert (begun.user_code, begun.interval) == ("WDJB-MJHT", 1)
    waited = core.grants.device_wait(begun.flow_id, UID, 3)
    # Polled at 1 s and 2 s; slow_down then put the next poll at 2 + 6 s, past this wait.
    assert (waited.state, provider.polls) == ("pending", 2)
    done = core.grants.device_wait(begun.flow_id, UID, 30)
    assert done.model_dump() == {
        "state": "connected",
        "name": "tracker",
        "scopes": ["read", "write"],
    }
    assert provider.polls == 3 and clock.now == pytest.approx(8.0)
    with pytest.raises(OAuthRefused, match="no such connect flow"):
        core.grants.device_wait(begun.flow_id, UID, 1)
    assert "CANARY" not in json.dumps(_actions(tmp_path))


def test_removing_a_grant_revokes_it_first(core: GatewayCore, provider: Provider) -> None:
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    assert core.grants.revoke("tracker") is None
    assert provider.revoked == [("refresh_token", b"CANARY-REFRESH-1")]
    core.remove_credential("tracker")
    assert core.grants.revoke("deploy-token") is None and len(provider.revoked) == 1


def test_a_failed_revocation_is_reported_and_journaled(
    core: GatewayCore, provider: Provider, tmp_path: Path
) -> None:
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    provider.revoke_fails = True
    problem = core.grants.revoke("tracker")
    assert problem is not None and "HTTP 503" in problem
    kinds = [r["kind"] for r in _actions(tmp_path)]
    assert kinds[-1] == "oauth.revoke_failed"


def test_a_dead_grant_is_named_by_status_until_it_is_reconnected(
    core: GatewayCore, provider: Provider
) -> None:
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    vault, _ = core._vault.current()
    core._credentials.grants.forget()  # as after a lock: the next action must refresh
    provider.refuse_refresh = True
    with pytest.raises(Error, match="sp oauth connect tracker"):
        core._credentials.grants.access("tracker", provider, vault)
    dead = core.status().dead_grants
    assert dead is not None and [d.name for d in dead] == ["tracker"]
    provider.refuse_refresh = False
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    assert core.status().dead_grants is None
    assert "dead_grants" not in core.status().model_dump()


def test_a_client_secret_is_wiped_when_its_flow_cannot_begin(
    core: GatewayCore, provider: Provider
) -> None:
    provider.no_device = True
    for name in ("tracker", "deploy-token"):
        secret = SecretBytes(b"CANARY-CLIENT-SECRET")
        with pytest.raises(Error):
            core.grants.begin(name, UID, redirect_uri=None, device=True, client_secret=secret)
        assert len(secret) == 0


def test_a_rotation_at_refresh_is_a_journaled_vault_save(
    core: GatewayCore, provider: Provider, tmp_path: Path
) -> None:
    flow_id, state = _begin_code(core)
    core.grants.finish(flow_id, UID, {"code": "the-code", "state": state, "iss": ISSUER})
    vault, _ = core._vault.current()
    before = vault.generation
    core._credentials.grants.forget()
    core._credentials.grants.access("tracker", provider, vault)  # refreshed: rotated
    sessions = read_records(tmp_path / "h" / "audit" / "sessions.jsonl")
    last = [r for r in sessions if r["kind"] == "vault.entry_rotated"][-1]
    assert last["body"] == {"name": "tracker"}
    # The generation the rotation reached (signing the heads then saves evidence: one more).
    assert last["ref"] == {"generation": before + 1}
