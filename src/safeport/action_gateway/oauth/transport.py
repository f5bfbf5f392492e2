"""The one place the OAuth client talks to a provider: https only, bounded, no redirects.

Requests go over the HTTPS executor's network seam (:mod:`..executors.https.pinned_network`):
each host's name is resolved once per connection and its addresses checked (link-local and cloud
metadata addresses never; private ones only with ``allow_private_addresses``), TLS verifies the
name against the system roots or the grant's ``ca_file``, and one deadline bounds the whole
request, the TLS handshake and every read included. Nothing is taken from the environment (no
proxy, no netrc), a redirect is an answer this client refuses (following it would carry a code or
a refresh token to wherever it points), and a body is read only to ``max_bytes``.

The forms posted here hold secrets (codes, verifiers, refresh tokens, client secrets). They are
given as :class:`SecretBytes`, revealed into the request body only, and no error raised here is
chained to httpx's (whose text may quote the request or the answer).
"""

from __future__ import annotations

import base64
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, quote_from_bytes

import h11
import httpx

from safeport.action_gateway.executors.https.pinned_network import (
    AddressRefused,
    NameNotResolved,
    PinnedNetworkBackend,
    PinnedTransport,
    Resolver,
    system_resolver,
)
from safeport.action_gateway.executors.https.tls import caused_by_tls
from safeport.action_gateway.executors.https.trust_files import UntrustedFile, check_trust_file
from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthError, OAuthUnreachable
from safeport.shared.exact_urls import UrlRefused, exact_url
from safeport.shared.http_deadline import request_deadline
from safeport.vault.secrets import SecretBytes

FormValue = str | SecretBytes
_CHUNK = 16384


@dataclass(frozen=True)
class RawResponse:
    status: int
    content_type: str | None
    body: bytes  # at most the transport's max_bytes

    def __repr__(self) -> str:
        # The body may hold tokens: its size only.
        size = len(self.body)
        return f"RawResponse(status={self.status}, type={self.content_type!r}, body=<{size} B>)"


class OAuthHttp:
    """HTTPS to one grant's provider: ``get_json`` for metadata, ``post_form`` for the rest."""

    def __init__(
        self,
        ca_file: str | None,
        timeout_s: float,
        max_bytes: int,
        *,
        allow_private: bool = False,
        resolver: Resolver = system_resolver,
        ca_owners: frozenset[int] | None = None,
    ) -> None:
        """``ca_owners``: the uids that may own ``ca_file`` and every folder on its way (the
        gateway passes :func:`trusted_owners`); None leaves the file unchecked (tests)."""
        self._ca_file = ca_file
        self._ca_owners = ca_owners
        self._timeout_s = timeout_s
        self._max_bytes = max_bytes
        self._allow_private = allow_private
        self._resolver = resolver
        self._lock = threading.Lock()
        self._clients: dict[tuple[str, int | None], httpx.Client] = {}
        self._context: ssl.SSLContext | None = None

    def get_json(self, url: str) -> RawResponse:
        """GET ``url`` asking for JSON (a metadata document)."""
        return self._send("GET", url, headers={"Accept": "application/json"}, body=None)

    def post_form(
        self,
        url: str,
        form: Mapping[str, FormValue],
        *,
        basic: tuple[str, SecretBytes] | None = None,
    ) -> RawResponse:
        """POST ``form`` (application/x-www-form-urlencoded), with HTTP Basic client
        authentication (RFC 6749 section 2.3.1) when ``basic`` is given."""
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/x-www-form-urlencoded",
        }
        body = bytearray(_encode_form(form))
        try:
            if basic is not None:
                authorization = bytearray(_basic_header(*basic))
                try:
                    return self._send(
                        "POST", url, headers=headers, body=bytes(body), basic=bytes(authorization)
                    )
                finally:
                    authorization[:] = bytes(len(authorization))
            return self._send("POST", url, headers=headers, body=bytes(body))
        finally:
            body[:] = bytes(len(body))

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str],
        body: bytes | None,
        basic: bytes | None = None,
    ) -> RawResponse:
        target = _https_url(url)
        client = self._client(target.hostname, target.port)
        deadline = time.monotonic() + self._timeout_s
        request_headers = [
            (name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()
        ]
        request_headers += [(b"Accept-Encoding", b"identity"), (b"User-Agent", b"safeport")]
        if basic is not None:
            request_headers.append((b"Authorization", basic))
        problem: OAuthError | None = None
        try:
            with request_deadline(deadline):
                request = client.build_request(method, url, headers=request_headers, content=body)
                response = client.send(request, stream=True)
                try:
                    return self._read(response, deadline)
                finally:
                    response.close()
        except OAuthError:
            raise
        except Exception as exc:
            problem = _translated(exc)
            if problem is None:
                raise
        # Raised outside the handler, so the error carries no context: httpx's text may quote
        # what was sent or received.
        raise problem

    def _read(self, response: httpx.Response, deadline: float) -> RawResponse:
        status = response.status_code
        if 300 <= status < 400:
            raise OAuthBadResponse(
                f"the provider answered HTTP {status} (a redirect, which is never followed)"
            )
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity":
            raise OAuthBadResponse("the provider's answer is compressed, which was not asked for")
        body = bytearray()
        for chunk in response.iter_raw(_CHUNK):
            body += chunk
            if len(body) > self._max_bytes:
                body[:] = bytes(len(body))
                raise OAuthBadResponse(
                    f"the provider's answer is over {self._max_bytes} bytes (max_response_bytes)"
                )
            if time.monotonic() > deadline:
                raise OAuthUnreachable("the provider did not answer in time")
        try:
            return RawResponse(status, response.headers.get("content-type"), bytes(body))
        finally:
            body[:] = bytes(len(body))

    def _client(self, host: str, port: int | None) -> httpx.Client:
        with self._lock:
            key = (host, port)
            client = self._clients.get(key)
            if client is None:
                backend = PinnedNetworkBackend(
                    host, self._resolver, allow_private=self._allow_private
                )
                client = httpx.Client(
                    transport=PinnedTransport(self._tls(), backend),
                    timeout=httpx.Timeout(self._timeout_s),
                    follow_redirects=False,
                    trust_env=False,
                )
                self._clients[key] = client
            return client

    def _tls(self) -> ssl.SSLContext:
        if self._context is None:
            if self._ca_file is not None and self._ca_owners is not None:
                _check_ca_file(self._ca_file, self._ca_owners)
            try:
                context = ssl.create_default_context(cafile=self._ca_file)
            except (OSError, ssl.SSLError, ValueError):
                raise OAuthUnreachable("the grant's ca_file cannot be read") from None
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            self._context = context
        return self._context


def _check_ca_file(ca_file: str, owners: frozenset[int]) -> None:
    # Whoever could swap the CA file could stand in for the provider and receive the refresh
    # token and the client secret: the same rule as a service's ca_file (trust_files.py).
    refusal: str | None = None
    try:
        check_trust_file(ca_file, owners)
    except UntrustedFile as exc:
        refusal = exc.message
    if refusal is not None:
        raise OAuthUnreachable(f"the grant's ca_file is not trusted: {refusal}")


def _https_url(url: str) -> _Target:
    refusal: str | None = None
    try:
        parsed = exact_url(url)
    except UrlRefused as exc:
        refusal = exc.reason
    if refusal is not None:
        raise OAuthBadResponse(f"a provider URL is refused: {refusal}")
    if parsed.scheme != "https":
        raise OAuthBadResponse("a provider URL is not https (plain http is refused)")
    return _Target(parsed.hostname, parsed.port)


@dataclass(frozen=True)
class _Target:
    hostname: str
    port: int | None


def _encode_form(form: Mapping[str, FormValue]) -> bytes:
    parts = []
    for name, value in form.items():
        if isinstance(value, SecretBytes):
            encoded = quote_from_bytes(value.reveal(), safe="")
        else:
            encoded = quote(value, safe="")
        parts.append(f"{quote(name, safe='')}={encoded}")
    return "&".join(parts).encode("ascii")


def _basic_header(client_id: str, secret: SecretBytes) -> bytes:
    # RFC 6749 section 2.3.1: each part form-urlencoded before the pair is base64-encoded.
    pair = f"{quote(client_id, safe='')}:".encode("ascii") + quote_from_bytes(
        secret.reveal(), safe=""
    ).encode("ascii")
    return b"Basic " + base64.b64encode(pair)


def _translated(exc: Exception) -> OAuthError | None:
    """httpx's, httpcore's and ssl's exceptions as OAuth errors (None: not one of theirs)."""
    if isinstance(exc, AddressRefused):
        return OAuthUnreachable(f"the provider would be reached at {exc.reason}, which is refused")
    if isinstance(exc, NameNotResolved):
        return OAuthUnreachable("the provider's name does not resolve")
    if isinstance(exc, httpx.TimeoutException):
        return OAuthUnreachable("the provider did not answer in time")
    if isinstance(exc, httpx.ConnectError | ssl.SSLError):
        if caused_by_tls(exc):
            return OAuthUnreachable("the TLS handshake with the provider failed verification")
        return OAuthUnreachable("the provider is unreachable")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.DecodingError | h11.ProtocolError):
        return OAuthBadResponse("the provider broke the HTTP protocol")
    if isinstance(exc, httpx.HTTPError | OSError):
        return OAuthUnreachable("the connection to the provider failed")
    return None
