"""control.sock's oauth.begin / oauth.finish / oauth.device_wait against a real gateway process:
the passphrase proof, the typed params, a code flow's URL (PKCE S256, state, the loopback
redirect), a callback that is not the flow's refused and the flow spent, and a provider that
cannot be reached failing the connect with nothing stored. The provider's own side is tested
against a real authorization server elsewhere; here its token endpoint is a closed port."""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from harness.gateway import PASSPHRASE, POLICY, AgentProcess, Gateway, ssh

SUBJECT = "safeport.action_gateway.handlers"
REDIRECT = "http://127.0.0.1:8123/callback"
# An oauth credential whose provider is a closed port on this host.
OAUTH_CREDENTIAL = """
[credentials.tracker]
kind = "oauth"
approval = "per-call"
[credentials.tracker.oauth]
client_id = "safeport-test"
authorization_endpoint = "https://127.0.0.1:9/authorize"
token_endpoint = "https://127.0.0.1:9/token"
allow_private_addresses = true
scopes = ["read"]
timeout_s = 2
"""
OAUTH_POLICY = POLICY + OAUTH_CREDENTIAL


@pytest.fixture
def oauth_gateway(gateway: Gateway) -> Gateway:
    gateway.write_policy(OAUTH_POLICY)
    gateway.accept_policy()
    return gateway


def _begin(gw: Gateway, **params: Any) -> dict[str, Any]:
    return gw.control("oauth.begin", **{"passphrase": PASSPHRASE, "name": "tracker", **params})


def test_a_code_flow_begins_with_pkce_state_and_the_loopback_redirect(
    oauth_gateway: Gateway,
) -> None:
    reply = _begin(oauth_gateway, redirect_uri=REDIRECT)
    assert reply["ok"], reply
    result = reply["result"]
    assert set(result) == {"flow_id", "scopes", "authorization_url"}
    assert result["scopes"] == ["read"]
    url = urlsplit(result["authorization_url"])
    query = parse_qs(url.query)
    assert url.netloc == "127.0.0.1:9" and url.path == "/authorize"
    assert query["redirect_uri"] == [REDIRECT] and query["code_challenge_method"] == ["S256"]
    assert len(query["state"][0]) >= 16 and len(query["code_challenge"][0]) == 43


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"passphrase": "not the passphrase"}, "denied"),
        ({"passphrase": None}, "invalid"),
        ({"device": True}, "invalid"),  # both a redirect and the device flow
        ({"wait_s": 5}, "invalid"),  # a param oauth.begin does not take
        ({"name": "deploy-token"}, "invalid"),  # not an oauth credential
        ({"client_secret_b64": "not base64 at all!"}, "invalid"),
    ],
)
def test_a_begin_that_is_not_right_is_refused(
    oauth_gateway: Gateway, params: dict[str, Any], code: str
) -> None:
    sent = {"passphrase": PASSPHRASE, "name": "tracker", "redirect_uri": REDIRECT, **params}
    reply = oauth_gateway.control("oauth.begin", **{k: v for k, v in sent.items() if v is not None})
    assert reply["ok"] is False and reply["error"]["code"] == code, reply


def test_a_callback_with_another_state_is_refused_and_spends_the_flow(
    oauth_gateway: Gateway,
) -> None:
    flow_id = _begin(oauth_gateway, redirect_uri=REDIRECT)["result"]["flow_id"]
    wrong = {"code": "CANARY-AUTH-CODE", "state": "not-the-flows-state-at-all"}
    reply = oauth_gateway.control("oauth.finish", flow_id=flow_id, query=wrong)
    assert reply["ok"] is False and "state" in reply["error"]["reason"], reply
    again = oauth_gateway.control("oauth.finish", flow_id=flow_id, query=wrong)
    assert "no such connect flow" in again["error"]["reason"], again
    assert "CANARY" not in json.dumps(oauth_gateway.journal("actions"))


def test_an_unreachable_token_endpoint_fails_the_connect_and_stores_nothing(
    oauth_gateway: Gateway,
) -> None:
    begun = _begin(oauth_gateway, redirect_uri=REDIRECT)["result"]
    state = parse_qs(urlsplit(begun["authorization_url"]).query)["state"][0]
    query = {"code": "CANARY-AUTH-CODE", "state": state}
    reply = oauth_gateway.control("oauth.finish", flow_id=begun["flow_id"], query=query)
    assert reply["ok"] is False, reply
    assert "CANARY" not in json.dumps(reply)
    entries = oauth_gateway.control("vault.entries")["result"]["entries"]
    assert all(entry["name"] != "tracker" for entry in entries)
    assert "dead_grants" not in oauth_gateway.control("status")["result"]


def test_a_device_flow_needs_a_device_endpoint_and_waits_are_bounded(
    oauth_gateway: Gateway,
) -> None:
    reply = _begin(oauth_gateway, device=True)
    assert reply["ok"] is False and "device" in reply["error"]["reason"], reply
    for wait_s in (0, 31):
        bad = oauth_gateway.control("oauth.device_wait", flow_id="x" * 32, wait_s=wait_s)
        assert bad["error"]["code"] == "invalid", bad
    unknown = oauth_gateway.control("oauth.device_wait", flow_id="x" * 32, wait_s=1)
    assert "no such connect flow" in unknown["error"]["reason"], unknown


def _from_agents_child(agent: AgentProcess, op: str, params: dict[str, Any]) -> dict[str, Any]:
    argv = [sys.executable, "-m", "tests.action_gateway.control_client", op, json.dumps(params)]
    reply: dict[str, Any] = json.loads(agent.spawn(argv)["out"])
    return reply


def test_an_agents_process_tree_can_neither_begin_nor_finish_a_connect(
    oauth_gateway: Gateway,
) -> None:
    agent = oauth_gateway.spawn_agent()
    agent.call(ssh("warm-up", command="uptime"))  # connected and known as a requester
    begin = {"passphrase": PASSPHRASE, "name": "tracker", "redirect_uri": REDIRECT}
    refused = _from_agents_child(agent, "oauth.begin", begin)
    assert refused["ok"] is False and refused["error"]["code"] == "denied", refused
    begun = _begin(oauth_gateway, redirect_uri=REDIRECT)["result"]
    state = parse_qs(urlsplit(begun["authorization_url"]).query)["state"][0]
    finish = {"flow_id": begun["flow_id"], "query": {"code": "c", "state": state}}
    for op, params in (("oauth.finish", finish), ("oauth.device_wait", {"flow_id": "x" * 32})):
        reply = _from_agents_child(agent, op, params)
        assert reply["ok"] is False and reply["error"]["code"] == "denied", reply
    agent.exit()
    # The agent's tries did not spend the human's flow: it reaches the provider (a closed port).
    reply = oauth_gateway.control("oauth.finish", **finish)
    assert "no such connect flow" not in reply["error"]["reason"], reply
