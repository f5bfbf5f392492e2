"""The one way a URL is read: every string a browser would read differently from its text (or
differently from Python's ``urlsplit``) is refused, and the URLs real clients use still pass."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from safeport.shared.exact_urls import ExactUrl, UrlRefused, exact_url
from safeport.shared.schemas.oauth_wire import PublicUrl

GOOD = {
    "http://127.0.0.1:8976/callback": ("127.0.0.1:8976", "127.0.0.1"),
    "http://[::1]:9/cb": ("[::1]:9", "::1"),
    "http://localhost:33418/cb": ("localhost:33418", "localhost"),
    "https://chatgpt.com/connector_platform_oauth_redirect": ("chatgpt.com", "chatgpt.com"),
    "https://claude.ai/api/mcp/auth_callback": ("claude.ai", "claude.ai"),
    "https://xn--chtgpt-4nf.com/cb": ("xn--chtgpt-4nf.com", "xn--chtgpt-4nf.com"),
    "https://app.example:8443/oauth/cb?tenant=a%20b": ("app.example:8443", "app.example"),
}

HOSTILE = [
    # After "]": anything but ":port" or the path's "/" (Python reads the host as ::1).
    "http://[::1].evil/cb",
    "http://[::1]evil.example/cb",
    "http://[::1]x:9/cb",
    "http://[::1]@evil.example/cb",
    # IPv4 forms browsers turn into 127.0.0.1 (or that a resolver reads as a name).
    "http://2130706433/cb",
    "http://0177.0.0.1/cb",
    "http://0x7f.1/cb",
    "http://0x7f000001/cb",
    "http://127.1/cb",
    "http://127.0.1/cb",
    "http://127.000.000.001/cb",
    "http://1.2.3.4.5/cb",
    # IPv6 not in its one written form.
    "http://[0:0:0:0:0:0:0:1]/cb",
    "http://[::0001]/cb",
    "http://[::ffff:127.0.0.1]/cb",
    "http://[::1%25eth0]/cb",
    # Names: trailing dot, empty label, underscore, upper case, bad punycode, encoded bytes.
    "http://localhost./cb",
    "http://localhost../cb",
    "https://chatgpt.com./cb",
    "https://a..example/cb",
    "https://.example/cb",
    "https://a_b.example/cb",
    "https://ChatGPT.com/cb",
    "HTTPS://chatgpt.com/cb",
    "https://xn--zz/cb",
    "http://%6cocalhost/cb",
    "http://local%68ost/cb",
    "https://chatgpt%2ecom/cb",
    # Not ASCII: a look-alike host, a full-width dot, a path the browser would encode.
    "https://ch\u0430tgpt.com/cb",
    "https://chatgpt\u3002com/cb",
    "https://chatgpt.com/caf\u00e9",
    # Credentials and fragments, whatever their spelling.
    "https://user@chatgpt.com/cb",
    "https://user:pw@chatgpt.com/cb",
    "https://:@chatgpt.com/cb",
    "https://@chatgpt.com/cb",
    "https://chatgpt.com/cb#",
    "https://chatgpt.com/cb#frag",
    # Backslashes, blanks and control characters (a browser strips or rewrites each).
    "https://chatgpt.com\\@evil.example/cb",
    "https:\\\\evil.example/cb",
    "http://127.0.0.1:9\\@evil.example/cb",
    " https://chatgpt.com/cb",
    "https://chatgpt.com/cb ",
    "https://chat\tgpt.com/cb",
    "https://chatgpt.com/c\nb",
    "https://chatgpt.com/c\rb",
    "https://chatgpt.com/c\x00b",
    "https://chatgpt.com/c\x1b[2Kb",
    "https://chatgpt.com/c\u2028b",
    "https://chatgpt.com/c\u202eb",
    "https://chatgpt.com/c\u200bb",
    "https://chatgpt.com/c\u00a0b",
    # Ports: out of range, zero, padded, signed, the scheme's default, empty.
    "http://127.0.0.1:65536/cb",
    "http://127.0.0.1:99999999999/cb",
    "http://127.0.0.1:0/cb",
    "http://127.0.0.1:08976/cb",
    "http://127.0.0.1:+8976/cb",
    "http://127.0.0.1:-1/cb",
    "https://chatgpt.com:443/cb",
    "http://127.0.0.1:80/cb",
    "http://127.0.0.1:/cb",
    # Paths the browser rewrites, no path at all, no host.
    "https://chatgpt.com/a/../cb",
    "https://chatgpt.com/./cb",
    "https://chatgpt.com/%2e%2e/cb",
    "https://chatgpt.com",
    "https:///cb",
    "https://",
    "http:/127.0.0.1/cb",
    "http:127.0.0.1/cb",
    # Other schemes.
    "javascript:alert(1)",
    "data:text/html,x",
    "file:///etc/passwd",
    "ftp://chatgpt.com/cb",
    "ws://127.0.0.1:9/cb",
    "custom-app://callback",
    "",
    "https://" + "a" * 2000 + ".example/cb",
]


@pytest.mark.parametrize("url", GOOD)
def test_the_urls_real_clients_use_are_read_as_written(url: str) -> None:
    parsed = exact_url(url)
    assert parsed.text == url
    assert (parsed.authority, parsed.hostname) == GOOD[url]


@pytest.mark.parametrize("url", HOSTILE, ids=[repr(u)[:60] for u in HOSTILE])
def test_a_url_read_one_way_here_and_another_by_a_browser_is_refused(url: str) -> None:
    with pytest.raises(UrlRefused) as caught:
        exact_url(url)
    # The reason is a fixed sentence: the URL itself is never echoed.
    assert url not in caught.value.reason or not url


def test_the_reviewers_urls_are_refused_although_python_reads_loopback_in_them() -> None:
    from urllib.parse import urlsplit

    for url in ("http://[::1].evil/cb", "http://[::1]evil.example/cb", "http://[::1]x:9/cb"):
        assert urlsplit(url).hostname == "::1"  # what the old rule trusted
        with pytest.raises(UrlRefused):
            exact_url(url)


@given(st.text(max_size=60))
def test_whatever_is_accepted_is_its_own_serialisation_with_a_plain_host(text: str) -> None:
    url = "https://" + text
    try:
        parsed = exact_url(url)
    except UrlRefused:
        return
    assert isinstance(parsed, ExactUrl) and parsed.text == url
    assert url.isascii() and url.isprintable() and " " not in url and "\\" not in url
    assert "@" not in parsed.authority and "#" not in url
    assert not parsed.host.endswith(".")


@pytest.mark.parametrize(
    "origin",
    [
        "https://[::1].evil",
        "http://[::1]x:9",
        "https://tunnel.example/",
        "https://tunnel.example/mcp",
        "https://Tunnel.example",
        "https://tunnel.example:443",
        "https://0x7f.1",
        "https://u@tunnel.example",
        "https://tunnel.example.",
    ],
)
def test_the_gateway_takes_the_relays_public_url_only_as_an_exact_origin(origin: str) -> None:
    adapter = TypeAdapter(PublicUrl)
    with pytest.raises(ValidationError):
        adapter.validate_python(origin)
    for good in ("https://tunnel.example.net", "http://127.0.0.1:8765", "http://[::1]:8765"):
        assert adapter.validate_python(good) == good
