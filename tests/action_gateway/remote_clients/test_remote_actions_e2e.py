"""A remote client's proposal: off unless `[remote] actions = true`; then the token must be a
good agent-profile token, every call is asked (never a session), and the card names the client."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.gateway import PASSPHRASE, POLICY, Gateway, decide, ssh, wait_card
from tests.action_gateway.remote_clients.oauth_flow import (
    REDIRECT,
    RESOURCE,
    Relay,
    claims,
    fields_of,
    pkce,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.remote_clients"


@pytest.fixture
def relay(gateway: Gateway) -> Iterator[Relay]:
    relay = Relay(gateway)
    yield relay
    relay.exit()


def _allow_remote_actions(gateway: Gateway) -> None:
    gateway.write_policy(POLICY + "\n[remote]\nactions = true\naccess_token_minutes = 5\n")
    gateway.accept_policy()


def _agent_token(relay: Relay) -> tuple[str, str]:
    client_id = relay.register()["body"]["client_id"]
    return client_id, relay.tokens(client_id, pkce(), profile="agent")["access_token"]


def test_remote_actions_are_refused_while_the_policy_leaves_them_off(
    gateway: Gateway, relay: Relay
) -> None:
    _, token = _agent_token(relay)
    reply = relay.agent.call(ssh("r1", command="uptime") | {"remote_token": token})
    assert reply["error"]["code"] == "denied" and "off" in reply["error"]["reason"]
    # The same proposal without a token is a local agent's, asked as usual.
    relay.agent.send(ssh("r2", command="uptime"))
    assert wait_card(gateway)["scope"] == "session"


def test_a_remote_call_is_asked_every_time_and_its_card_names_the_client(
    gateway: Gateway, relay: Relay
) -> None:
    _allow_remote_actions(gateway)
    client_id, token = _agent_token(relay)
    for request_id in ("r1", "r2"):
        # uptime's credential asks once per session for local agents; remote: every call.
        relay.agent.send(ssh(request_id, command="uptime") | {"remote_token": token})
        card = wait_card(gateway)
        assert card["scope"] == "per-call"
        assert fields_of(card)["remote"] == f"Test Client ({client_id})"
        assert decide(gateway, card["id"])["ok"]
        assert relay.agent.next()["ok"]
    assert gateway.control("sessions.list")["result"]["sessions"] == []
    assert token not in json.dumps(gateway.journal("actions") + gateway.journal("sessions"))
    # Locked, the token is honoured no more (and nothing is asked).
    assert gateway.control("vault.lock")["ok"]
    locked = relay.agent.call(ssh("r3", command="uptime") | {"remote_token": token})
    assert locked["error"]["code"] == "locked"


def test_a_reader_a_revoked_or_a_forged_token_cannot_propose(
    gateway: Gateway, relay: Relay
) -> None:
    _allow_remote_actions(gateway)
    client_id = relay.register()["body"]["client_id"]
    reader = relay.tokens(client_id, pkce())["access_token"]
    forged = reader[:-4] + ("AAAA" if not reader.endswith("AAAA") else "BBBB")
    for token, why in ((reader, "reading only"), (forged, "not valid"), ("x" * 40, "not valid")):
        reply = relay.agent.call(ssh("r1", command="uptime") | {"remote_token": token})
        assert reply["error"]["code"] == "denied" and why in reply["error"]["reason"], reply
    agent_id, agent = _agent_token(relay)
    assert gateway.control("clients.revoke", id=agent_id, passphrase=PASSPHRASE)["ok"]
    reply = relay.agent.call(ssh("r2", command="uptime") | {"remote_token": agent})
    assert reply["error"]["code"] == "denied" and "no longer good" in reply["error"]["reason"]
    assert gateway.control("approvals.list")["result"]["cards"] == []


def test_an_agent_grant_given_while_actions_are_off_reads_only_and_turning_them_on_asks_again(
    gateway: Gateway, relay: Relay
) -> None:
    # Actions off: the client asks for the agent profile; the card says what it really gets.
    client_id = relay.register()["body"]["client_id"]
    card, query = relay.approved_code(client_id, (code := pkce()), profile="agent")
    assert fields_of(card)["profile"].startswith("reader (asked for agent: remote actions are off")
    first = relay.token(grant_type="authorization_code", code=query["code"][0],
                        redirect_uri=REDIRECT, client_id=client_id, code_verifier=code.verifier,
                        resource=RESOURCE)  # fmt: skip
    assert first["status"] == 200
    assert claims(relay, first["body"]["access_token"])["sp_profile"] == "reader"
    # The human turns actions on. Neither the token nor a refreshed one may propose: the
    # standing grant was given for reading.
    _allow_remote_actions(gateway)
    refreshed = relay.token(grant_type="refresh_token", client_id=client_id,
                            refresh_token=first["body"]["refresh_token"])  # fmt: skip
    assert refreshed["status"] == 200
    assert claims(relay, refreshed["body"]["access_token"])["sp_profile"] == "reader"
    for token in (first["body"]["access_token"], refreshed["body"]["access_token"]):
        reply = relay.agent.call(ssh("r1", command="uptime") | {"remote_token": token})
        assert reply["error"]["code"] == "denied" and "reading only" in reply["error"]["reason"]
    assert gateway.control("approvals.list")["result"]["cards"] == []
    # Asked again with actions on, the card shows the agent profile, and its token proposes.
    card, _ = relay.approved_code(client_id, pkce(), profile="agent")
    assert fields_of(card)["profile"] == "agent"
    agent = relay.tokens(client_id, pkce(), profile="agent")["access_token"]
    assert claims(relay, agent)["sp_profile"] == "agent"
    relay.agent.send(ssh("r2", command="uptime") | {"remote_token": agent})
    assert wait_card(gateway)["scope"] == "per-call"
