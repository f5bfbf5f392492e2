"""OAuth grants end to end: a real `sp gateway run` on a real vault acts with the grant against
the real authorization server (harness/real_oidc.py), whose bearer-checked route is the declared
HTTPS operation. The grant is connected by `sp oauth connect` as the human runs it, by the code
flow with PKCE (the browser lands on sp's loopback listener) or by the device flow (the code
entered at the provider's page), the browser played over HTTP.

Proven here: the action runs with an access token minted in the gateway; twenty actions at once
while the token expires cause one refresh, and twenty refused with 401 one refresh and one retry
each; a refresh token spent elsewhere first kills the grant, which is reported with the remedy
(`sp oauth connect NAME`) and never retried; a grant the human revoked at the provider fails the
next action the same way, and `sp status` and `sp doctor` name the dead grant. No token or code
the provider issued appears in any result, journal (unsealed), log, file of the home, card, sp
output or `ps` line."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from harness.real_oidc import DEVICE_GRANT, OidcProvider
from safeport.action_gateway.oauth.errors import OAuthGrantDead
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.oauth.oauth_rig import (
    NAME,
    RigFor,
    names_the_dead_grant,
    provider_client,
)
from tests.cli.test_real_vault_e2e import sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.oauth.broker"

pytestmark = pytest.mark.integration


def test_a_code_flow_grant_acts_and_twenty_at_once_refresh_once(rig_for: RigFor) -> None:
    rig = rig_for("olivia")
    before = len(rig.refreshes())
    first = rig.approve_session()
    assert first.get("ok"), first
    assert first["result"]["status"] == 200
    assert first["result"]["fields"] == {"sub": "olivia", "scope": "openid profile", "state": "ok"}
    assert rig.approve_session(1).get("ok") and rig.approve_session(2).get("ok")
    assert rig.refreshes()[before:] == []  # the connect's access token serves until it expires
    # The card said whom the action acts as, with the scopes granted; so does `sp vault list`.
    assert len(rig.cards) == 3
    assert all(f"acts as {NAME} with scopes openid profile" in card for card in rig.cards)
    listed = json.loads(sp(rig.home, "vault", "list", "--json").stdout)
    assert [(e["name"], e["scopes"]) for e in listed if e["kind"] == "oauth"] == [
        (NAME, ["openid", "profile"])
    ]
    # A service that echoes the access token back: the whole result is withheld, as for any
    # credential a service echoes.
    echoed = rig.call("echo", "echo")
    assert not echoed.get("ok") and echoed["error"]["code"] == "upstream", echoed
    assert "echoed the credential" in echoed["error"]["reason"]
    assert rig.provider.issued("access_token")[-1] not in json.dumps(echoed)

    # The next access token lives 61 s: inside the gateway's refresh margin a second later. The
    # provider ends the current one so that the next action (a 401, then a refresh) gets it.
    rig.provider.set_access_token_ttl(61)
    assert rig.provider.drop_access_token(rig.provider.issued("access_token")[-1])
    assert rig.call("to-short-token").get("ok")
    issued_at = time.monotonic()
    rig.provider.set_access_token_ttl(3600)
    assert [r["status"] for r in rig.refreshes()[before:]] == [200]
    time.sleep(max(0.0, 1.2 - (time.monotonic() - issued_at)))
    replies = rig.at_once(20, "expiring-")
    assert all(reply.get("ok") for reply in replies), replies
    assert [r["status"] for r in rig.refreshes()[before:]] == [200, 200]
    assert {reply["result"]["fields"]["sub"] for reply in replies} == {"olivia"}

    # The provider ends the access token the gateway holds: every action meets a 401, and one
    # refresh serves their one retry each.
    assert rig.provider.drop_access_token(rig.provider.issued("access_token")[-1])
    resources = len(rig.provider.events("resource"))
    replies = rig.at_once(20, "refused-")
    assert all(reply.get("ok") for reply in replies), replies
    assert [r["status"] for r in rig.refreshes()[before:]] == [200, 200, 200]
    statuses = [e["status"] for e in rig.provider.events("resource")[resources:]]
    assert statuses.count(200) == 20 and 1 <= statuses.count(401) <= 20


def test_a_refresh_token_spent_elsewhere_kills_the_grant_once(rig_for: RigFor) -> None:
    rig = rig_for("peggy")
    assert rig.approve_session().get("ok")
    held = rig.provider.issued("access_token")[-1]  # the access token the gateway holds
    # A stolen copy of the vault's refresh token, used first by its thief.
    stolen = rig.provider.issued("refresh_token")[-1].encode()
    thief = provider_client(rig.provider).refresh(SecretBytes(stolen), None)
    # The gateway's access token ends: its next action refreshes with the spent token.
    assert rig.provider.drop_access_token(held)
    before = len(rig.refreshes())
    first = rig.call("after-theft")
    assert not first.get("ok"), first
    message = json.dumps(first["error"])
    assert "refused by its provider" in message and f"sp oauth connect {NAME}" in message
    for n in range(3):  # reported dead, not asked again
        reply = rig.call(f"again-{n}")
        assert not reply.get("ok") and f"sp oauth connect {NAME}" in json.dumps(reply["error"])
    refreshes = rig.refreshes()[before:]
    assert [(r["status"], r["error"]) for r in refreshes] == [(400, "invalid_grant")]
    names_the_dead_grant(rig)
    # The provider took the reuse as theft: the thief's tokens died with the grant.
    with rig.provider.client() as http:
        bearer = {"Authorization": f"Bearer {thief.access_token.reveal().decode()}"}
        assert http.get(rig.provider.resource_url, headers=bearer).status_code == 401


def test_a_grant_revoked_at_the_provider_fails_the_next_action_naming_the_remedy(
    rig_for: RigFor,
) -> None:
    rig = rig_for("quentin")
    first = rig.approve_session()
    assert first.get("ok"), first
    assert rig.provider.revoke_account("quentin") >= 1
    before = len(rig.refreshes())
    reply = rig.call("after-revoke")
    assert not reply.get("ok"), reply
    assert f"sp oauth connect {NAME}" in json.dumps(reply["error"])
    assert [(r["status"], r["error"]) for r in rig.refreshes()[before:]] == [(400, "invalid_grant")]
    again = rig.call("again")
    assert f"sp oauth connect {NAME}" in json.dumps(again["error"])
    assert len(rig.refreshes()) == before + 1
    names_the_dead_grant(rig)


def test_a_device_flow_grant_acts(rig_for: RigFor, oidc_provider: OidcProvider) -> None:
    before = len(oidc_provider.token_requests(DEVICE_GRANT))  # the provider is the session's
    rig = rig_for("rupert", device=True)
    polls = rig.provider.token_requests(DEVICE_GRANT)[before:]
    assert polls[-1]["status"] == 200
    # Polled at the provider's pace: no poll was told to slow down.
    assert not [p for p in polls if p.get("error") == "slow_down"]
    reply = rig.approve_session()
    assert reply.get("ok") and reply["result"]["fields"]["sub"] == "rupert", reply
    # `sp vault remove` revokes the grant at the provider (RFC 7009) before removing it.
    held = rig.provider.issued("refresh_token")[-1]
    revocations = len(rig.provider.events("token_revocation"))
    removed = sp(rig.home, "vault", "remove", NAME, "--passphrase-file", str(rig.home / "pw"))
    rig.said.append(removed.stdout + removed.stderr)
    assert removed.returncode == 0, removed.stderr
    assert [e["status"] for e in rig.provider.events("token_revocation")[revocations:]] == [200]
    with pytest.raises(OAuthGrantDead):
        provider_client(rig.provider).refresh(SecretBytes(held.encode()), None)
    after = rig.call("after-remove")
    assert not after.get("ok"), after


def test_a_confidential_client_refreshes_with_its_secret_which_appears_nowhere(
    rig_for: RigFor,
) -> None:
    rig = rig_for("sophie", confidential=True)
    assert rig.approve_session().get("ok")
    before = len(rig.refreshes())
    # The access token ends: the next action refreshes, authenticating with the vault's secret.
    assert rig.provider.drop_access_token(rig.provider.issued("access_token")[-1])
    reply = rig.call("after-refresh")
    assert reply.get("ok") and reply["result"]["fields"]["sub"] == "sophie", reply
    refreshes = rig.refreshes()[before:]
    assert [(r["status"], r["client_id"]) for r in refreshes] == [(200, "sp-confidential")]
    # A lock wipes the access tokens the gateway held: after the unlock, the next action (on a
    # new session card: the lock ended the old one) refreshes again before it acts.
    home, pw = rig.home, str(rig.home / "pw")
    assert sp(home, "vault", "lock").returncode == 0
    assert sp(home, "vault", "unlock", "--passphrase-file", pw).returncode == 0
    assert rig.approve_session().get("ok")
    assert [r["status"] for r in rig.refreshes()[before:]] == [200, 200]
    # The secret is in no command line of the running gateway and its peers (sp was given a file;
    # the rig also searches every reply, journal, log and file of the home for it).
    assert (
        rig.provider.client_secret
        not in subprocess.run(
            ["ps", "-eo", "args"], capture_output=True, text=True, timeout=10
        ).stdout
    )
