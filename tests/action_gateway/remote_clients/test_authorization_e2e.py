"""The gateway as the authorization server, over the real agent.sock and control.sock: each
attack that is an authorization decision, beside the legitimate use it must not break."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from harness.gateway import Gateway, decide, wait_card
from safeport.shared.wire import send_message
from tests.action_gateway.remote_clients.oauth_flow import (
    PUBLIC,
    REDIRECT,
    RESOURCE,
    Relay,
    claims,
    fields_of,
    pkce,
)
from tests.cli.cli_runner import run_sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.remote_clients"


@pytest.fixture
def relay(gateway: Gateway) -> Iterator[Relay]:
    relay = Relay(gateway)
    yield relay
    relay.exit()


def _journal_text(gateway: Gateway) -> str:
    return json.dumps(gateway.journal("sessions"))


def test_a_registered_client_approved_on_a_card_gets_tokens_bound_to_the_roots_approved(
    gateway: Gateway, relay: Relay
) -> None:
    metadata = relay.result("oauth_metadata", public_url=PUBLIC)["metadata"]
    assert metadata["issuer"] == PUBLIC
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["client_id_metadata_document_supported"] is True
    registered = relay.register()
    assert registered["status"] == 201
    client_id = registered["body"]["client_id"]
    code = pkce()
    card, query = relay.approved_code(client_id, code)
    fields = fields_of(card)
    # The card says who asks, from where, for what, and shows the browser page's code.
    assert card["action"] == "oauth_client"
    assert fields["client"] == "Test Client" and fields["metadata"] == "registered here"
    assert fields["redirect"] == "127.0.0.1:33418" and fields["roots"] == "docs"
    assert fields["code"] == card["user_code_shown"]
    assert "access 10 min" in fields["tokens"]
    assert query["state"] == ["st-123"] and query["iss"] == [PUBLIC]
    answer = relay.token(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=code.verifier,
        resource=RESOURCE,
    )
    assert answer["status"] == 200 and answer["headers"]["Cache-Control"] == "no-store"
    body = answer["body"]
    access = claims(relay, body["access_token"])
    assert access["sub"] == client_id and access["aud"] == RESOURCE
    assert access["sp_roots"] == ["docs"] and access["sp_profile"] == "reader"
    assert access["exp"] - access["iat"] == 600 == body["expires_in"]
    assert relay.check(client_id, access["jti"]) == {"active": True, "reason": None}
    # Another client's id with this token's id is not this token.
    assert relay.check("sp-someone-else", access["jti"])["active"] is False
    # The journal tells the story, never a token or a code.
    kinds = gateway.kinds("sessions")
    for kind in ("oauth.client_registered", "oauth.approved", "oauth.code_redeemed"):
        assert kind in kinds
    text = _journal_text(gateway)
    for secret in (body["access_token"], body["refresh_token"], query["code"][0]):
        assert secret not in text


def test_an_approval_for_some_roots_does_not_cover_others(gateway: Gateway, relay: Relay) -> None:
    client_id = relay.register()["body"]["client_id"]
    relay.tokens(client_id, pkce(), roots=("docs",))
    # Other roots are a new question for the human.
    wider = relay.authorize(client_id, pkce(), roots=("docs", "secrets"))
    card = wait_card(gateway)
    assert fields_of(card)["roots"] == "docs, secrets"
    assert decide(gateway, card["id"], approve=False)["ok"]
    denied = relay.wait(wider["request_id"])
    assert denied["state"] == "denied"
    assert parse_qs(urlsplit(denied["location"]).query)["error"] == ["access_denied"]


def test_a_stranger_repeating_an_approved_clients_request_gets_a_card_not_a_code(
    gateway: Gateway, relay: Relay
) -> None:
    """A client id and its redirect URI are public (a metadata document publishes both), and
    nothing here knows whose browser asks: whoever starts the request reads the code from the
    waiting page's redirect, with a PKCE verifier of their own. So every authorization is the
    human's to answer, even one the same client, redirect and roots had approved before."""
    client_id = relay.register()["body"]["client_id"]
    relay.tokens(client_id, pkce(), roots=("docs",))
    stranger = pkce()
    again = relay.authorize(client_id, stranger, roots=("docs",))
    assert again["kind"] == "wait"
    assert relay.wait(again["request_id"], wait_s=2)["state"] == "pending"
    card = wait_card(gateway)
    assert fields_of(card)["code"] == again["user_code"]
    # The human, who started no such request, denies it: no code reaches anyone.
    assert decide(gateway, card["id"], approve=False)["ok"]
    denied = relay.wait(again["request_id"])
    assert denied["state"] == "denied" and "code=" not in denied["location"]


def test_a_look_alike_redirect_host_is_shown_as_the_name_the_browser_goes_to(
    gateway: Gateway, relay: Relay
) -> None:
    """The card tells the real app from an impostor by its hosts: a host in another script that
    looks like a well-known one (a Cyrillic a) registers only in the ASCII (punycode) form the
    browser goes to, and that form is what the card shows."""
    assert relay.register(redirect_uris=["https://ch\u0430tgpt.com/cb"])["status"] == 400
    look_alike = "https://xn--chtgpt-4nf.com/cb"
    client_id = relay.register(redirect_uris=[look_alike])["body"]["client_id"]
    code = pkce()
    started = relay.authorize(client_id, code, redirect_uri=look_alike)
    assert started["redirect_host"] == "xn--chtgpt-4nf.com"
    card = wait_card(gateway)
    assert fields_of(card)["redirect"] == "xn--chtgpt-4nf.com"
    assert decide(gateway, card["id"], approve=False)["ok"]
    # The legitimate host, in ASCII, reads as itself.
    plain = relay.register(redirect_uris=["https://chatgpt.com/cb"])["body"]["client_id"]
    started = relay.authorize(plain, pkce(), redirect_uri="https://chatgpt.com/cb")
    assert started["redirect_host"] == "chatgpt.com"
    assert fields_of(wait_card(gateway))["redirect"] == "chatgpt.com"


def test_a_replayed_code_is_refused_and_revokes_the_tokens_it_gave(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    form = {
        "grant_type": "authorization_code",
        "code": query["code"][0],
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": code.verifier,
    }
    first = relay.token(**form)
    assert first["status"] == 200
    jti = claims(relay, first["body"]["access_token"])["jti"]
    assert relay.check(client_id, jti)["active"] is True
    replay = relay.token(**form)
    assert replay["status"] == 400 and replay["body"]["error"] == "invalid_grant"
    assert relay.check(client_id, jti) == {"active": False, "reason": "revoked"}
    refreshed = relay.token(
        grant_type="refresh_token",
        refresh_token=first["body"]["refresh_token"],
        client_id=client_id,
    )
    assert refreshed["status"] == 400
    assert "oauth.code_replayed" in gateway.kinds("sessions")


def test_a_failed_pkce_check_spends_the_code_and_the_right_verifier_comes_too_late(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    # Whoever holds a stolen code gets one guess at its verifier, whatever the guess.
    for guess in (pkce().verifier, "", "x" * 43, "challenge"):
        code = pkce()
        _, query = relay.approved_code(client_id, code)
        form = {"grant_type": "authorization_code", "code": query["code"][0],
                "redirect_uri": REDIRECT, "client_id": client_id, "resource": RESOURCE}  # fmt: skip
        wrong = guess if guess != "challenge" else code.challenge
        failed = relay.token(**form, code_verifier=wrong)
        assert failed["status"] == 400 and failed["body"]["error"] == "invalid_grant"
        late = relay.token(**form, code_verifier=code.verifier)
        assert late["status"] == 400 and late["body"]["error"] == "invalid_grant", guess
    assert gateway.kinds("sessions").count("oauth.code_spent") == 4
    assert "oauth.code_redeemed" not in gateway.kinds("sessions")
    # A request that never reached the proof (another redirect URI) spends nothing: the code
    # still works with its verifier, once.
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    form = {"grant_type": "authorization_code", "code": query["code"][0],
            "client_id": client_id, "code_verifier": code.verifier}  # fmt: skip
    assert relay.token(**form, redirect_uri=REDIRECT + "/other")["status"] == 400
    assert relay.token(**form, redirect_uri=REDIRECT)["status"] == 200


def test_a_reused_refresh_token_revokes_the_whole_family(gateway: Gateway, relay: Relay) -> None:
    client_id = relay.register()["body"]["client_id"]
    body = relay.tokens(client_id, pkce())
    old_refresh = body["refresh_token"]
    rotated = relay.token(
        grant_type="refresh_token", refresh_token=old_refresh, client_id=client_id
    )
    assert rotated["status"] == 200 and rotated["body"]["refresh_token"] != old_refresh
    new_jti = claims(relay, rotated["body"]["access_token"])["jti"]
    assert relay.check(client_id, new_jti)["active"] is True
    # The rotated-away token comes back (a thief, or the client after a thief): all of it ends.
    reuse = relay.token(grant_type="refresh_token", refresh_token=old_refresh, client_id=client_id)
    assert reuse["status"] == 400 and reuse["body"]["error"] == "invalid_grant"
    assert relay.check(client_id, new_jti)["active"] is False
    latest = rotated["body"]["refresh_token"]
    assert (
        relay.token(grant_type="refresh_token", refresh_token=latest, client_id=client_id)["status"]
        == 400
    )
    assert "oauth.refresh_reused" in gateway.kinds("sessions")


def test_an_unknown_client_or_a_redirect_it_did_not_register_gets_an_error_page_not_a_redirect(
    relay: Relay,
) -> None:
    client_id = relay.register()["body"]["client_id"]
    code = pkce()
    for client, redirect in (
        ("sp-nobody", REDIRECT),
        (client_id, "https://attacker.example/steal"),
        (client_id, REDIRECT + "/more"),
        (client_id, REDIRECT + "?x=1"),
    ):
        answer = relay.authorize(client, code, redirect_uri=redirect)
        assert answer["kind"] == "error" and answer["location"] is None, answer
        assert "attacker" not in json.dumps(answer)
    assert relay.authorize(client_id, code)["kind"] == "wait"


def test_a_redirect_uri_outside_ascii_is_compared_not_a_failure(relay: Relay) -> None:
    client_id = relay.register()["body"]["client_id"]
    # Asked with a URI it did not register, in another script: an error page, as for any other.
    stranger = relay.authorize(client_id, pkce(), redirect_uri="https://\u0435vil.example/cb")
    assert stranger["kind"] == "error" and stranger["error"] == "invalid_request"
    # Registered in the form the browser goes to, it is asked for exactly that one; the same
    # host written outside ASCII is another string, so an error page.
    uri = "https://xn--t-9fab.example/cb"
    other = relay.register(redirect_uris=[uri])["body"]["client_id"]
    unicode_form = relay.authorize(other, pkce(), redirect_uri="https://\u00e9t\u00e9.example/cb")
    assert unicode_form["kind"] == "error" and unicode_form["error"] == "invalid_request"
    assert relay.authorize(other, pkce(), redirect_uri=uri)["kind"] == "wait"


def test_registration_refuses_redirects_a_code_could_leak_through(relay: Relay) -> None:
    for bad in (
        "http://example.com/cb",
        "https://example.com/cb#frag",
        "javascript:alert(1)",
        "https://user:pw@example.com/cb",
        "http://127.0.0.1.attacker.example/cb",
        # Loopback to Python's urlsplit, another host (or no URL) to a browser.
        "http://[::1].evil/cb",
        "http://[::1]evil.example/cb",
        "http://[::1]x:9/cb",
        "http://0x7f.1/cb",
        "http://2130706433/cb",
        "http://localhost./cb",
    ):
        answer = relay.register(redirect_uris=[bad])
        assert answer["status"] == 400, bad
        assert answer["body"]["error"] == "invalid_redirect_uri"
    good = relay.register(redirect_uris=["https://chatgpt.com/connector/oauth/cb", REDIRECT])
    assert good["status"] == 201 and good["body"]["token_endpoint_auth_method"] == "none"


def test_a_registration_flood_is_cut_off_and_journaled_once(gateway: Gateway, relay: Relay) -> None:
    answers = [relay.register()["status"] for _ in range(63)]
    assert answers[:60] == [201] * 60 and answers[60:] == [429] * 3
    kinds = gateway.kinds("sessions")
    assert kinds.count("oauth.client_registered") == 60
    assert kinds.count("oauth.registrations_throttled") == 1


def test_missing_or_plain_pkce_and_a_foreign_resource_are_refused_to_the_redirect_uri(
    relay: Relay,
) -> None:
    client_id = relay.register()["body"]["client_id"]
    relay.tokens(client_id, pkce())  # a client the human trusts: its errors may go back to it
    code = pkce()
    cases = {
        "missing": ({"code_challenge": "-", "code_challenge_method": "-"}, "invalid_request"),
        "plain": (
            {"code_challenge": code.verifier[:43], "code_challenge_method": "plain"},
            "invalid_request",
        ),
        "resource": ({"resource": "https://other.example/mcp"}, "invalid_target"),
        "token": ({"response_type": "token"}, "unsupported_response_type"),
    }
    for name, (params, error) in cases.items():
        answer = relay.authorize(client_id, code, ("docs",), **params)
        assert answer["kind"] == "redirect", name
        query = parse_qs(urlsplit(answer["location"]).query)
        assert query["error"] == [error] and query["state"] == ["st-123"], name
        assert query["iss"] == [PUBLIC]
        assert answer["location"].startswith(REDIRECT + "?")
    assert relay.authorize(client_id, code)["kind"] == "wait"


def test_a_strangers_new_client_cannot_use_error_redirects_as_an_open_redirector(
    relay: Relay,
) -> None:
    """Anyone can register a client with any https redirect URI; until the human approved it,
    an error is an error page, so the public URL cannot bounce a victim's browser to it."""
    landing = "https://phish.example/landing"
    client_id = relay.register(redirect_uris=[landing])["body"]["client_id"]
    for params in ({"response_type": "token"}, {"code_challenge": "-"}):
        answer = relay.authorize(
            client_id, pkce(), ("docs",), "reader", redirect_uri=landing, **params
        )
        assert answer["kind"] == "error" and answer["location"] is None, params
        assert answer["status"] == 400


def test_a_wrong_verifier_redirect_or_client_cannot_redeem_a_code(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    other_id = relay.register()["body"]["client_id"]
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    good = {
        "grant_type": "authorization_code",
        "code": query["code"][0],
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": code.verifier,
    }
    # Refusals before the verifier is checked spend nothing (a wrong verifier spends the code:
    # test_a_failed_pkce_check_spends_the_code_and_the_right_verifier_comes_too_late).
    for change in (
        {"redirect_uri": "http://127.0.0.1:9/other"},
        {"client_id": other_id},
        {"resource": "https://other.example/mcp"},
        {"redirect_uri": "-"},  # named in the request, so the token request must repeat it
    ):
        answer = relay.token(**{k: v for k, v in (good | change).items() if v != "-"})
        assert answer["status"] == 400, change
    assert relay.token(**good)["status"] == 200
    # A wrong verifier on a fresh code: refused, and the code is gone for the right one too.
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    fresh = good | {"code": query["code"][0], "code_verifier": code.verifier}
    assert relay.token(**(fresh | {"code_verifier": pkce().verifier}))["status"] == 400
    assert relay.token(**fresh)["status"] == 400


def test_guessing_codes_meets_a_limit_while_the_real_client_still_redeems_its_own(
    relay: Relay,
) -> None:
    client_id = relay.register()["body"]["client_id"]
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    guess = {"grant_type": "authorization_code", "redirect_uri": REDIRECT, "client_id": "guesser"}
    answers = [
        relay.token(code=f"guess-{n}", code_verifier=code.verifier, **guess) for n in range(11)
    ]
    assert [a["status"] for a in answers[:10]] == [400] * 10
    assert answers[10]["status"] == 429 and answers[10]["body"]["error"] == "slow_down"
    real = relay.token(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=code.verifier,
    )
    assert real["status"] == 200


def test_failures_a_stranger_spends_in_a_clients_name_do_not_lock_that_client_out(
    relay: Relay,
) -> None:
    """Client ids are public, so a failure budget a stranger can spend in any client's name (or
    in all) must not turn away the real client's valid code or refresh token."""
    client_id = relay.register()["body"]["client_id"]
    code = pkce()
    _, query = relay.approved_code(client_id, code)
    bad = {"grant_type": "refresh_token", "refresh_token": "guess"}
    for _ in range(10):
        assert relay.token(client_id=client_id, **bad)["status"] == 400
    for n in range(60):
        relay.token(client_id=f"someone-{n}", **bad)
    assert relay.token(client_id=client_id, **bad)["body"]["error"] == "slow_down"
    real = relay.token(
        grant_type="authorization_code",
        code=query["code"][0],
        redirect_uri=REDIRECT,
        client_id=client_id,
        code_verifier=code.verifier,
    )
    assert real["status"] == 200, real
    refreshed = relay.token(
        grant_type="refresh_token",
        refresh_token=real["body"]["refresh_token"],
        client_id=client_id,
    )
    assert refreshed["status"] == 200, refreshed


def test_each_waiting_page_has_its_own_code_and_an_unknown_request_id_learns_nothing(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    first = relay.authorize(client_id, pkce())
    card = wait_card(gateway)
    assert fields_of(card)["code"] == first["user_code"]
    assert len(first["user_code"]) == 9 and len(first["request_id"]) >= 43
    guessed = relay.wait("x" * 43, wait_s=0)
    assert guessed == {"state": "expired", "location": None}
    assert relay.wait(first["request_id"], wait_s=0)["state"] == "pending"
    assert decide(gateway, card["id"])["ok"]
    assert relay.wait(first["request_id"])["state"] == "approved"
    # An answer is collected once.
    assert relay.wait(first["request_id"], wait_s=0)["state"] == "expired"


def test_a_revoked_client_is_stopped_at_its_next_request_and_listed_as_revoked(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    body = relay.tokens(client_id, pkce())
    jti = claims(relay, body["access_token"])["jti"]
    # `sp context clients list|revoke`, as the human runs them.
    listed = json.loads(run_sp("context", "clients", "list", "--json", home=gateway.home).stdout)
    assert [c["client_id"] for c in listed] == [client_id]
    assert listed[0]["last_used"] is None and listed[0]["approved"][0]["roots"] == ["docs"]
    assert relay.check(client_id, jti)["active"] is True
    shown = run_sp("context", "clients", "list", home=gateway.home).stdout
    assert "name        Test Client" in shown.splitlines()
    assert any(line.startswith("approved    docs as reader via ") for line in shown.splitlines())
    revoked = run_sp("context", "clients", "revoke", client_id, home=gateway.home)
    assert revoked.returncode == 0 and client_id in revoked.stdout
    assert relay.check(client_id, jti)["active"] is False
    refresh = relay.token(
        grant_type="refresh_token", refresh_token=body["refresh_token"], client_id=client_id
    )
    assert refresh["status"] == 400
    assert gateway.control("clients.list")["result"]["clients"][0]["revoked"] is True
    # Asking again is a new card, never the old approval.
    relay.authorize(client_id, pkce())
    assert wait_card(gateway)["action"] == "oauth_client"
    assert "oauth.client_revoked" in gateway.kinds("sessions")


def test_a_code_given_before_a_revocation_is_dead_even_once_the_client_is_approved_again(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    old = pkce()
    _, before = relay.approved_code(client_id, old)
    revoked = run_sp("context", "clients", "revoke", client_id, home=gateway.home)
    assert revoked.returncode == 0
    # The human lets the client back in with a new card; the code from before stays dead.
    fresh = pkce()
    _, after = relay.approved_code(client_id, fresh)
    form = {"grant_type": "authorization_code", "redirect_uri": REDIRECT, "client_id": client_id}
    stale = relay.token(code=before["code"][0], code_verifier=old.verifier, **form)
    assert stale["status"] == 400 and stale["body"]["error"] == "invalid_grant"
    assert relay.token(code=after["code"][0], code_verifier=fresh.verifier, **form)["status"] == 200


def test_a_client_revokes_its_own_refresh_token_rfc7009(gateway: Gateway, relay: Relay) -> None:
    client_id = relay.register()["body"]["client_id"]
    body = relay.tokens(client_id, pkce())
    jti = claims(relay, body["access_token"])["jti"]
    answer = relay.result(
        "oauth_revoke",
        public_url=PUBLIC,
        form={"token": body["refresh_token"], "client_id": client_id},
    )
    assert answer["status"] == 200
    assert relay.check(client_id, jti)["active"] is False
    # An access token revokes the family it came from as well.
    other = relay.tokens(client_id, pkce(), roots=("docs", "notes"))
    other_jti = claims(relay, other["access_token"])["jti"]
    form = {"token": other["access_token"], "client_id": client_id}
    assert relay.result("oauth_revoke", public_url=PUBLIC, form=form)["status"] == 200
    assert relay.check(client_id, other_jti)["active"] is False
    # An unknown token is answered the same (nothing learned).
    unknown = relay.result("oauth_revoke", public_url=PUBLIC, form={"token": "nothing"})
    assert unknown["status"] == 200


def test_a_locked_vault_issues_nothing_and_honours_nothing(gateway: Gateway, relay: Relay) -> None:
    client_id = relay.register()["body"]["client_id"]
    body = relay.tokens(client_id, pkce())
    jti = claims(relay, body["access_token"])["jti"]
    assert gateway.control("vault.lock")["ok"]
    for kind, fields in (
        ("oauth_keys", {}),
        ("oauth_token", {"public_url": PUBLIC, "form": {"grant_type": "refresh_token"}}),
        (
            "oauth_register",
            {"public_url": PUBLIC, "client_metadata": {"redirect_uris": [REDIRECT]}},
        ),
    ):
        reply = relay.ask(kind, **fields)
        assert reply["ok"] is False and reply["error"]["code"] == "locked", kind
    assert relay.check(client_id, jti) == {"active": False, "reason": "the vault is locked"}
    gateway.unlock()
    # Tokens issued before the lock stay dead; the client is asked about on a card again.
    assert relay.check(client_id, jti)["active"] is False
    assert relay.tokens(client_id, pkce())["access_token"]


def test_two_clients_can_wait_at_once_and_a_relay_card_does_not_block_them(
    gateway: Gateway, relay: Relay
) -> None:
    first_id = relay.register()["body"]["client_id"]
    second_id = relay.register()["body"]["client_id"]
    first = relay.authorize(first_id, pkce())
    second = relay.authorize(second_id, pkce())
    assert first["kind"] == second["kind"] == "wait"
    assert first["user_code"] != second["user_code"]
    deadline = time.monotonic() + 30  # returns as soon as it appears; a loaded machine is slow
    cards: list[dict[str, object]] = []
    while len(cards) < 2 and time.monotonic() < deadline:
        cards = gateway.control("approvals.list")["result"]["cards"]
        time.sleep(0.02)
    by_code = {fields_of(card)["code"]: card for card in cards}
    assert set(by_code) == {first["user_code"], second["user_code"]}
    # The human approves the second and denies the first, each by its code.
    assert decide(gateway, str(by_code[second["user_code"]]["id"]))["ok"]
    assert decide(gateway, str(by_code[first["user_code"]]["id"]), approve=False)["ok"]
    assert relay.wait(second["request_id"])["state"] == "approved"
    assert relay.wait(first["request_id"])["state"] == "denied"


def test_a_strangers_waiting_request_does_not_shut_out_the_same_clients_real_one(
    gateway: Gateway, relay: Relay
) -> None:
    """A client id is public: a stranger's request for it, left waiting, must not deny the
    human's own; both are cards and the code on the page tells which is the human's."""
    client_id = relay.register()["body"]["client_id"]
    stranger = relay.authorize(client_id, pkce())
    wait_card(gateway)
    human = relay.authorize(client_id, pkce())
    assert relay.wait(human["request_id"], wait_s=1)["state"] == "pending"
    cards = gateway.control("approvals.list")["result"]["cards"]
    by_code = {fields_of(card)["code"]: card for card in cards}
    assert set(by_code) == {stranger["user_code"], human["user_code"]}
    assert decide(gateway, str(by_code[human["user_code"]]["id"]))["ok"]
    assert decide(gateway, str(by_code[stranger["user_code"]]["id"]), approve=False)["ok"]
    assert relay.wait(human["request_id"])["state"] == "approved"
    assert relay.wait(stranger["request_id"])["state"] == "denied"


def test_an_authorization_flood_meets_the_budget_and_is_journaled_once(
    gateway: Gateway, relay: Relay
) -> None:
    client_id = relay.register()["body"]["client_id"]
    answers = [relay.authorize(client_id, pkce()) for _ in range(62)]
    # At most 16 pages wait at once; past 60 a minute the budget refuses, said once.
    assert [a["kind"] for a in answers[:16]] == ["wait"] * 16
    assert {(a["kind"], a["error"]) for a in answers[16:]} == {("error", "temporarily_unavailable")}
    assert gateway.kinds("sessions").count("oauth.authorizations_throttled") == 1


def test_waiting_pages_cannot_crowd_out_the_checks_on_their_connection(gateway: Gateway) -> None:
    link = gateway.agent()
    try:
        register = {
            "v": 1,
            "id": "reg",
            "type": "oauth_register",
            "public_url": PUBLIC,
            "client_metadata": {"redirect_uris": [REDIRECT]},
        }
        client_id = link.call(register)["result"]["body"]["client_id"]
        code = pkce()
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "code_challenge": code.challenge,
            "code_challenge_method": "S256",
            "resource": RESOURCE,
        }
        started = link.call(
            {
                "v": 1,
                "id": "az",
                "type": "oauth_authorize",
                "public_url": PUBLIC,
                "params": params,
                "roots": ["docs"],
            }
        )["result"]
        for n in range(17):
            send_message(
                link.sock,
                {
                    "v": 1,
                    "id": f"w{n}",
                    "type": "oauth_authorize_wait",
                    "request_id": started["request_id"],
                    "wait_s": 5.0,
                },
            )
        send_message(
            link.sock,
            {
                "v": 1,
                "id": "chk",
                "type": "oauth_check",
                "client_id": client_id,
                "token_id": "x" * 16,
            },
        )
        first = [link.recv() for _ in range(2)]
        by_id = {reply["id"]: reply for reply in first}
        # The seventeenth wait is refused at once; the check is answered before any wait ends.
        assert by_id["w16"]["error"]["reason"] == "too many OAuth requests in progress"
        assert by_id["chk"]["result"]["active"] is False
    finally:
        link.close()
