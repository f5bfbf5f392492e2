"""The OAuth client's transport against a real TLS server (the suite's, with its test CA): https
only, no redirects followed, answers bounded in size and time, secrets only in the request body."""

from __future__ import annotations

import base64
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from harness.real_tls import API_HOST, OTHER_HOST, TlsServer
from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthError, OAuthUnreachable
from safeport.action_gateway.oauth.transport import FormValue, OAuthHttp
from safeport.vault.secrets import SecretBytes

SECRET = "cs-Wq8Er4Ty2Ui6Op0As3Df7Gh1Jk5Lz9"
REFRESH = "rt-Mn3Bv7Cx1Zl5Kj9Hg2Fd6Sa0Pq4Wo8"


def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


@pytest.fixture
def http(tls_server: TlsServer) -> Iterator[OAuthHttp]:
    client = OAuthHttp(str(tls_server.ca_file), 5, 65536, allow_private=True, resolver=_loopback)
    yield client
    client.close()


def _requests_to(tls_server: TlsServer, path: str) -> list[dict[str, object]]:
    with tls_server.recorded.lock:
        return [r for r in tls_server.recorded.requests if str(r["path"]).startswith(path)]


def _holds_nothing(exc: BaseException, *secrets: str) -> None:
    assert isinstance(exc, OAuthError)
    assert exc.__cause__ is None and exc.__context__ is None
    for text in (str(exc), repr(exc), exc.diagnostic()):
        for secret in secrets:
            assert secret not in text


def test_get_json_reads_a_metadata_document(http: OAuthHttp, tls_server: TlsServer) -> None:
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/oauth-t/meta"] = {"issuer": "https://x"}
    answer = http.get_json(f"{tls_server.base_url()}/oauth-t/meta")
    assert answer.status == 200 and answer.content_type == "application/json"
    assert answer.body == b'{"issuer": "https://x"}'
    (request,) = _requests_to(tls_server, "/oauth-t/meta")
    headers = request["headers"]
    assert isinstance(headers, dict) and headers["Accept"] == "application/json"


def test_a_form_is_posted_encoded_and_basic_auth_follows_rfc_6749(
    http: OAuthHttp, tls_server: TlsServer
) -> None:
    form_with_odd: dict[str, FormValue] = {
        "grant_type": "refresh_token",
        "refresh_token": SecretBytes(REFRESH.encode()),
        "x": "a b&c=d",
    }
    secret = SecretBytes(b"s:e cr%t")
    answer = http.post_form(
        f"{tls_server.base_url()}/oauth-t/token", form_with_odd, basic=("id:1", secret)
    )
    assert answer.status == 404  # the server's answer is handed back, whatever it is
    (request,) = _requests_to(tls_server, "/oauth-t/token")
    body = request["body"]
    assert isinstance(body, bytes)
    assert parse_qs(body.decode(), strict_parsing=True) == {
        "grant_type": ["refresh_token"],
        "refresh_token": [REFRESH],
        "x": ["a b&c=d"],
    }
    headers = request["headers"]
    assert isinstance(headers, dict)
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    scheme, encoded = str(headers["Authorization"]).split(" ")
    assert scheme == "Basic"
    assert base64.b64decode(encoded) == b"id%3A1:s%3Ae%20cr%25t"
    assert secret.reveal() == b"s:e cr%t"  # the caller's secret is left as it was


@pytest.mark.parametrize(
    "url",
    [
        "http://api.safeport.test/token",
        "HTTP://api.safeport.test/token",
        "ftp://api.safeport.test/token",
        "https://user:pw@api.safeport.test/token",
        "//api.safeport.test/token",
        "https://0x7f.1/token",
    ],
)
def test_a_url_that_is_not_exactly_https_is_refused_before_connecting(
    http: OAuthHttp, tls_server: TlsServer, url: str
) -> None:
    with tls_server.recorded.lock:
        before = tls_server.recorded.connections
    with pytest.raises(OAuthBadResponse) as caught:
        http.post_form(url, {"refresh_token": SecretBytes(REFRESH.encode())})
    _holds_nothing(caught.value, REFRESH)
    with tls_server.recorded.lock:
        assert tls_server.recorded.connections == before


@pytest.mark.parametrize("path", ["/redirect-other", "/redirect-metadata"])
def test_a_redirect_is_an_answer_never_followed(
    http: OAuthHttp, tls_server: TlsServer, path: str
) -> None:
    with pytest.raises(OAuthBadResponse, match="redirect") as caught:
        http.post_form(f"{tls_server.base_url()}{path}", {"code": SecretBytes(REFRESH.encode())})
    _holds_nothing(caught.value, REFRESH, "token=abc", "169.254")
    assert not _requests_to(tls_server, "/v1/x/services/y/status?token=abc")


def test_an_oversized_answer_is_refused_at_the_bound(tls_server: TlsServer) -> None:
    small = OAuthHttp(str(tls_server.ca_file), 10, 4096, allow_private=True, resolver=_loopback)
    try:
        with pytest.raises(OAuthBadResponse, match="over 4096 bytes") as caught:
            small.get_json(f"{tls_server.base_url()}/huge")
        _holds_nothing(caught.value, "xxxxxxxx")
        with tls_server.recorded.lock:
            tls_server.recorded.answers["/oauth-t/fits"] = {"a": "b" * 4000}
        assert len(small.get_json(f"{tls_server.base_url()}/oauth-t/fits").body) <= 4096
    finally:
        small.close()


def test_a_provider_slower_than_the_deadline_is_unreachable(tls_server: TlsServer) -> None:
    # The server waits 3 s before it answers; the request's one deadline is 0.5 s.
    quick = OAuthHttp(str(tls_server.ca_file), 0.5, 65536, allow_private=True, resolver=_loopback)
    try:
        started = time.monotonic()
        with pytest.raises(OAuthUnreachable, match="in time") as caught:
            quick.post_form(f"{tls_server.base_url()}/slow", {"code": SecretBytes(b"c0de")})
        _holds_nothing(caught.value, "c0de")
        assert time.monotonic() - started < 30  # bounded, whatever the machine's load
    finally:
        quick.close()


def test_a_certificate_from_another_ca_fails_verification(tls_server: TlsServer) -> None:
    system_roots = OAuthHttp(None, 5, 65536, allow_private=True, resolver=_loopback)
    try:
        with pytest.raises(OAuthUnreachable, match="TLS") as caught:
            system_roots.post_form(
                f"{tls_server.base_url()}/oauth-t/token",
                {"refresh_token": SecretBytes(REFRESH.encode())},
            )
        _holds_nothing(caught.value, REFRESH)
    finally:
        system_roots.close()
    assert not _requests_to(tls_server, "/oauth-t/token?never")


def test_a_private_address_is_refused_unless_allowed(tls_server: TlsServer) -> None:
    strict = OAuthHttp(str(tls_server.ca_file), 5, 65536, resolver=_loopback)
    try:
        with pytest.raises(OAuthUnreachable, match="refused") as caught:
            strict.get_json(f"{tls_server.base_url()}/oauth-t/private")
        _holds_nothing(caught.value)
    finally:
        strict.close()
    assert not _requests_to(tls_server, "/oauth-t/private")


def test_an_unreadable_ca_file_is_said(tmp_path: object) -> None:
    broken = OAuthHttp("/nonexistent/ca.pem", 5, 65536, allow_private=True, resolver=_loopback)
    with pytest.raises(OAuthUnreachable, match="ca_file"):
        broken.get_json(f"https://{API_HOST}:1/x")


def test_one_client_per_host_and_the_name_is_verified(
    http: OAuthHttp, tls_server: TlsServer
) -> None:
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/oauth-t/other"] = {"ok": True}
    assert http.get_json(f"{tls_server.base_url(OTHER_HOST)}/oauth-t/other").status == 200
    assert http.get_json(f"{tls_server.base_url()}/oauth-t/other").status == 200


def test_no_secret_reaches_a_log_record(
    http: OAuthHttp, tls_server: TlsServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    http.post_form(
        f"{tls_server.base_url()}/oauth-t/logged",
        {"refresh_token": SecretBytes(REFRESH.encode())},
        basic=("client", SecretBytes(SECRET.encode())),
    )
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert REFRESH not in text and SECRET not in text
    assert base64.b64encode(f"client:{SECRET}".encode()).decode() not in text


def test_a_ca_file_someone_untrusted_could_swap_is_refused(
    tls_server: TlsServer, tmp_path: Path
) -> None:
    # A copy of the suite's CA owned by someone other than root (the test user, or nobody when
    # the suite runs as root): the owners the gateway trusts here are root alone.
    copy = tmp_path / "ca.pem"
    shutil.copyfile(tls_server.ca_file, copy)
    if os.geteuid() == 0:
        os.chown(copy, 65534, 65534)
    untrusted = OAuthHttp(
        str(copy), 5, 65536, allow_private=True, resolver=_loopback, ca_owners=frozenset({0})
    )
    with pytest.raises(OAuthUnreachable, match="not trusted") as caught:
        untrusted.get_json(f"{tls_server.base_url()}/oauth-t/untrusted")
    _holds_nothing(caught.value)
    assert not _requests_to(tls_server, "/oauth-t/untrusted")
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/oauth-t/trusted"] = {"ok": True}
    trusted = OAuthHttp(
        str(tls_server.ca_file), 5, 65536, allow_private=True, resolver=_loopback,
        ca_owners=frozenset({0, os.geteuid()}),
    )  # fmt: skip
    try:
        assert trusted.get_json(f"{tls_server.base_url()}/oauth-t/trusted").status == 200
    finally:
        trusted.close()


def test_a_raw_answer_shows_its_size_not_its_body(http: OAuthHttp, tls_server: TlsServer) -> None:
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/oauth-t/repr"] = {"access_token": REFRESH}
    answer = http.get_json(f"{tls_server.base_url()}/oauth-t/repr")
    assert REFRESH not in repr(answer) and REFRESH not in str(answer)
    assert f"<{len(answer.body)} B>" in repr(answer)
