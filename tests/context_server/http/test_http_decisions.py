"""The HTTP server's pure decisions: bind and public URL, rate buckets, page escaping."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.context_server.http.admission import Admission, Rate
from safeport.context_server.http.endpoint import (
    host_header_values,
    origin_values,
    parse_endpoint,
)
from safeport.context_server.http.pages import CSP, error_page, waiting_page
from safeport.errors import UsageError


def test_loopback_binds_without_tls_and_the_public_url_names_the_tunnel() -> None:
    endpoint = parse_endpoint("127.0.0.1:8765", "https://Tunnel.Example/")
    assert endpoint.public_url == "https://tunnel.example"
    assert endpoint.resource == "https://tunnel.example/mcp"
    assert "tunnel.example" in host_header_values(endpoint)
    assert "127.0.0.1:8765" in host_header_values(endpoint)
    assert "https://tunnel.example" in origin_values(endpoint)


def test_a_public_url_is_written_the_way_a_browser_reaches_it() -> None:
    for typed, origin in (
        ("https://Tunnel.Example:443/", "https://tunnel.example"),
        ("https://tunnel.example:8443", "https://tunnel.example:8443"),
        ("http://[::1]:8765", "http://[::1]:8765"),
        ("http://0x7f.1:8765", "http://127.0.0.1:8765"),  # the browser's reading, not a name
    ):
        assert parse_endpoint("127.0.0.1:8765", typed).public_url == origin, typed


def test_a_non_loopback_bind_without_tls_is_refused_and_says_why() -> None:
    with pytest.raises(UsageError, match="without TLS"):
        parse_endpoint("0.0.0.0:8765")
    with pytest.raises(UsageError, match="without TLS"):
        parse_endpoint("192.168.1.5:8765")
    endpoint = parse_endpoint("0.0.0.0:8765", None, Path("c.pem"), Path("k.pem"))
    assert endpoint.public_url == "https://0.0.0.0:8765"


@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("8765", None),
        ("127.0.0.1:0", None),
        ("127.0.0.1:x", None),
        ("127.0.0.1:8765", "http://tunnel.example"),  # clear text beyond this machine
        ("127.0.0.1:8765", "https://tunnel.example/sub/path"),
        ("127.0.0.1:8765", "https://user@tunnel.example"),
        ("127.0.0.1:8765", "ftp://tunnel.example"),
        # Loopback (or another host) to urlsplit, no URL or another one to a browser.
        ("127.0.0.1:8765", "http://[::1].evil"),
        ("127.0.0.1:8765", "http://[::1]x:8765"),
        ("127.0.0.1:8765", "https://tunnel.example\\@evil.example"),
        ("127.0.0.1:8765", "https://tunnel.example."),
        ("127.0.0.1:8765", "https://tunnel_x.example"),
        ("127.0.0.1:8765", "https://tunnel.example#x"),
        ("127.0.0.1:8765", "https://tunnel.example?x=1"),
        ("127.0.0.1:8765", "https://tun\u202enel.example"),
    ],
)
def test_malformed_binds_and_public_urls_are_refused(bind: str, url: str | None) -> None:
    with pytest.raises(UsageError):
        parse_endpoint(bind, url)


def test_an_anonymous_flood_empties_only_the_anonymous_bucket() -> None:
    now = [0.0]
    admission = Admission(lambda: now[0], client_rate=Rate(10, 10), anonymous_rate=Rate(1, 5))
    refused = [admission.admit_anonymous() for _ in range(100)]
    assert refused[:5] == [None] * 5
    assert all(wait is not None and wait > 0 for wait in refused[5:])
    assert [admission.admit_client("approved") for _ in range(10)] == [None] * 10
    assert admission.admit_client("approved") is not None  # its own budget, bounded too
    now[0] += 1.0
    assert admission.admit_anonymous() is None  # refilled at its rate


def test_pages_escape_every_value_and_allow_no_script() -> None:
    evil = '<script>alert(1)</script>"'
    page = waiting_page("r" * 20 + "<x>", "ABCD-EFGH", evil, evil)
    html = bytes(page.body).decode()
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert page.headers["content-security-policy"] == CSP
    assert "script-src" not in CSP and "default-src 'none'" in CSP
    assert "ABCD-EFGH" in html
    assert "Location" not in page.headers
    error = error_page(400, evil, evil)
    assert "<script>" not in bytes(error.body).decode()
    assert error.status_code == 400
