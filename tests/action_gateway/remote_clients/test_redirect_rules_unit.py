"""Redirect URIs (pure rules): only an exact URL registers, http only on the three loopback
names, the card's host is the exact URL's own, and the string matched at /authorize is the one
stored -- including for a record kept from before the exact rule."""

from __future__ import annotations

import pytest

from safeport.action_gateway.remote_clients import authorization_rules as rules

LOOPBACK_AND_HTTPS = (
    "http://127.0.0.1:8976/callback",
    "http://[::1]:9/cb",
    "http://localhost:33418/cb",
    "http://127.0.0.1/cb",
    "https://chatgpt.com/connector_platform_oauth_redirect",
    "https://claude.ai/api/mcp/auth_callback",
    "https://xn--chtgpt-4nf.com/cb",
)

# Each read as loopback by Python's urlsplit, or rewritten by a browser to another host.
LOOK_LIKE_LOOPBACK = (
    "http://[::1].evil/cb",
    "http://[::1]evil.example/cb",
    "http://[::1]x:9/cb",
    "http://2130706433/cb",
    "http://0177.0.0.1/cb",
    "http://0x7f.1/cb",
    "http://127.1/cb",
    "http://localhost./cb",
    "http://LOCALHOST:9/cb",
    "http://%6cocalhost/cb",
    "http://127.0.0.1.attacker.example/cb",
    "http://localhost.attacker.example/cb",
    "http://127.0.0.1:9\\@attacker.example/cb",
    "http://127.0.0.1@attacker.example/cb",
    "http://attacker.example@127.0.0.1/cb",
    "http://[::ffff:127.0.0.1]/cb",
    "http://[0:0:0:0:0:0:0:1]/cb",
    "http://127.0.0.2/cb",
    "http://0.0.0.0/cb",
    "http://example.com/cb",
    # The other loopback forms the WHATWG writer keeps as written: still not the three names.
    "http://[::ffff:7f00:1]/cb",
    "http://[::]:9/cb",
    "http://127.0.0.1.nip.io/cb",
    # Tabs and line breaks, which a browser drops from inside a URL before reading it.
    "http://127.0.0.1:9/c\tb",
    "http://local\nhost:9/cb",
    # A native app's private-use scheme (RFC 8252 7.1): any installed app can claim it.
    "com.example.app:/cb",
    "com.example.app://127.0.0.1/cb",
)


@pytest.mark.parametrize("uri", LOOPBACK_AND_HTTPS)
def test_https_and_http_on_the_loopback_names_register(uri: str) -> None:
    assert rules.redirect_uri_problem(uri) is None
    assert rules.registration_problem({"redirect_uris": [uri]}) is None


@pytest.mark.parametrize("uri", LOOK_LIKE_LOOPBACK)
def test_http_that_only_looks_like_loopback_does_not_register(uri: str) -> None:
    assert rules.redirect_uri_problem(uri) is not None
    problem = rules.registration_problem({"redirect_uris": ["https://ok.example/cb", uri]})
    assert problem is not None and problem.error == "invalid_redirect_uri"
    assert uri not in problem.description


def test_the_card_shows_the_exact_urls_host_and_port() -> None:
    assert rules.redirect_host("http://[::1]:9/cb") == "[::1]:9"
    assert rules.redirect_host("http://127.0.0.1:8976/callback") == "127.0.0.1:8976"
    assert rules.redirect_host("https://xn--chtgpt-4nf.com/cb") == "xn--chtgpt-4nf.com"
    # A record from before the rule is shown whole, never the part urlsplit would pick.
    assert rules.redirect_host("http://[::1].evil/cb") == "http://[::1].evil/cb"


def test_only_the_stored_string_itself_matches_at_authorize() -> None:
    stored = ("http://127.0.0.1:8976/callback",)
    assert rules.authorize_client_problem({"redirect_uri": stored[0]}, stored) is None
    assert rules.authorize_client_problem({}, stored) is None
    for variant in (
        "http://127.0.0.1:08976/callback",
        "http://127.1:8976/callback",
        "http://127.0.0.1:8976/callback/",
        "HTTP://127.0.0.1:8976/callback",
        "http://127.0.0.1:8976/./callback",
    ):
        problem = rules.authorize_client_problem({"redirect_uri": variant}, stored)
        assert problem is not None and problem.error == "invalid_request", variant


@pytest.mark.parametrize(
    "legacy", ["http://[::1].evil/cb", "http://[::1]x:9/cb", "http://127.1/cb"]
)
def test_a_redirect_stored_before_the_exact_rule_is_never_sent_a_code(legacy: str) -> None:
    named = rules.authorize_client_problem({"redirect_uri": legacy}, (legacy,))
    assert named is not None and named.error == "invalid_request"
    only = rules.authorize_client_problem({}, (legacy,))
    assert only is not None and only.error == "invalid_request"


@pytest.mark.parametrize(
    ("uri", "sent"),
    [
        ("http://127.0.0.1:9/cb", "http://127.0.0.1:9/cb?code=c&state=s&iss=https%3A%2F%2Fi"),
        (
            "https://app.example/cb?a=1",
            "https://app.example/cb?a=1&code=c&state=s&iss=https%3A%2F%2Fi",
        ),
        # An empty query is kept by the browser's writing ("?" and nothing after it): the answer
        # joins it, never a second "?" that would make the client read "?code" as the key.
        ("http://127.0.0.1:9/cb?", "http://127.0.0.1:9/cb?code=c&state=s&iss=https%3A%2F%2Fi"),
    ],
)
def test_the_answer_joins_the_redirect_uris_own_query_as_a_browser_reads_it(
    uri: str, sent: str
) -> None:
    assert rules.redirect_uri_problem(uri) is None
    assert rules.redirect_location(uri, "https://i", "s", "code", "c") == sent
