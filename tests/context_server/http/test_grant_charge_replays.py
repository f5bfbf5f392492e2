"""Replayed grants and the rate buckets (pure: keys made in the test, time a parameter).

A stranger who saw one of a client's codes or refresh tokens -- a code from a redirect URL left
in a browser history or a proxy log, a refresh token rotated long ago -- holds a grant that is
still signed for that client, forever: the gateway refuses it, but the charge never asks the
gateway. Its replays must not spend what the client itself needs: its bearer requests' budget,
or the budget of the grants it holds now."""

from __future__ import annotations

import base64
import secrets

from safeport.action_gateway.remote_clients.signing_key import SigningKey
from safeport.context_server.http.admission import Admission, Rate
from safeport.context_server.http.grant_charge import charge
from safeport.shared.grant_tokens import mint, signed_for

CLIENT = "sp-approved"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def gateway_key() -> SigningKey:
    return SigningKey.from_seed(secrets.token_bytes(32))


def code_form(code: str, client_id: str = CLIENT) -> dict[str, str]:
    return {"grant_type": "authorization_code", "code": code, "client_id": client_id}


def refresh_form(token: str, client_id: str = CLIENT) -> dict[str, str]:
    return {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}


def test_a_strangers_replays_of_a_spent_code_leave_the_clients_bearer_budget_alone() -> None:
    key = gateway_key()
    keys = [key.private.public_key()]
    now = [0.0]
    admission = Admission(lambda: now[0], client_rate=Rate(5, 20), anonymous_rate=Rate(1, 1))
    spent = code_form(mint("code", CLIENT, key.sign_bytes))  # exchanged long ago, then seen
    for _ in range(100):  # the stranger: the anonymous bucket first, then whatever it reaches
        charge(admission, spent, keys)
    # What RateGate asks for the client's own requests, made with its (good) access token.
    assert admission.admit_client(CLIENT) is None, "a stranger emptied the client's bucket"


def test_a_strangers_replays_of_a_rotated_refresh_token_leave_the_current_one_served() -> None:
    key = gateway_key()
    keys = [key.private.public_key()]
    now = [0.0]
    admission = Admission(lambda: now[0], client_rate=Rate(5, 20), anonymous_rate=Rate(1, 1))
    rotated = refresh_form(mint("refresh", CLIENT, key.sign_bytes))
    current = refresh_form(mint("refresh", CLIENT, key.sign_bytes))
    for _ in range(100):
        charge(admission, rotated, keys)
    assert charge(admission, current, keys) is None, "the client's refresh was refused"


def test_a_grant_verifies_in_one_spelling_only() -> None:
    """The signature's 86 characters carry 516 bits for 512: the last one's low four bits are
    ignored by the decoder, so 15 spellings the gateway never issued verified as its grant."""
    key = gateway_key()
    keys = [key.private.public_key()]
    token = mint("refresh", CLIENT, key.sign_bytes)
    others = [token[:-1] + c for c in ALPHABET if c != token[-1]]
    accepted = [t for t in others if signed_for(t, "refresh", CLIENT, keys)]
    assert accepted == [], f"{len(accepted)} other spellings verified"
    signature = token.split(".")[1]
    raw = base64.urlsafe_b64decode(signature + "==")
    assert base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == signature
