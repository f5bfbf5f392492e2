"""Client ID metadata documents: fetched safely, checked, cached.

A client whose ``client_id`` is an https URL publishes its metadata there. Fetching it is a
request the internet chooses, made from the machine that holds the vault, so it is fenced like
the HTTPS executor's own requests: https only; the name resolved once and every address checked
(loopback, private, link-local, metadata, multicast and reserved addresses refused); the
connection made to the checked address (no second lookup a rebinding DNS could answer);
certificate verified for the name; no redirects; one deadline for the whole fetch; at most
64 KiB read. The document's own ``client_id`` must be the URL it was fetched from. Answers are
cached for a few minutes (good ones only), so a client cannot make the gateway fetch on every
request.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpcore
import httpx

from safeport.action_gateway.executors.https.pinned_network import (
    AddressRefused,
    NameNotResolved,
    PinnedNetworkBackend,
    PinnedTransport,
    Resolver,
    system_resolver,
)
from safeport.action_gateway.remote_clients.authorization_rules import (
    client_name_of,
    registration_problem,
)
from safeport.action_gateway.remote_clients.throttle import Throttle
from safeport.errors import Denied
from safeport.shared.exact_urls import UrlRefused, exact_url
from safeport.shared.http_deadline import request_deadline
from safeport.shared.outside_json import JsonRefused, loads_object

MAX_DOCUMENT_BYTES = 64 * 1024
CACHE_TTL_S = 300.0
REFUSAL_TTL_S = 60.0
MAX_CACHED = 128
FETCHES_PER_MINUTE = 30


class DocumentRefused(Denied):
    """The metadata document could not be used (a fixed reason, never the server's text)."""


class DocumentRefusedAgain(DocumentRefused):
    """A refusal remembered, or the fetch budget spent: nothing was fetched (nor journaled)."""


@dataclass(frozen=True)
class FetchRules:
    """How documents are fetched. The defaults are the only safe ones; tests that serve a
    document on 127.0.0.1 pass ``unsafe_allow_private_addresses`` and their CA explicitly."""

    resolver: Resolver = system_resolver
    unsafe_allow_private_addresses: bool = False
    ca_file: str | None = None
    timeout_s: float = 5.0
    max_bytes: int = MAX_DOCUMENT_BYTES
    fetches_per_minute: int = FETCHES_PER_MINUTE


@dataclass(frozen=True)
class ClientDocument:
    client_id: str
    name: str
    redirect_uris: tuple[str, ...]


def is_document_url(client_id: str) -> bool:
    return client_id.startswith("https://")


class MetadataDocuments:
    def __init__(self, rules: FetchRules, clock: Callable[[], float] = time.monotonic) -> None:
        self._rules = rules
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, ClientDocument | DocumentRefused]] = {}
        self._fetches = Throttle(rules.fetches_per_minute, 60.0, clock)

    def get(self, url: str) -> ClientDocument:
        """The document at ``url``; a refusal is remembered for a minute (asking again with the
        same URL fetches nothing), and at most 30 fetches a minute are made in all."""
        with self._lock:
            cached = self._cache.get(url)
        if cached is not None and cached[0] > self._clock():
            if isinstance(cached[1], DocumentRefused):
                raise DocumentRefusedAgain(cached[1].message)
            return cached[1]
        if self._fetches.take() != "ok":
            raise DocumentRefusedAgain("too many metadata documents were fetched; wait a minute")
        try:
            answer: ClientDocument | DocumentRefused = self._fetch(url)
        except DocumentRefused as exc:
            answer = exc
        ttl = REFUSAL_TTL_S if isinstance(answer, DocumentRefused) else CACHE_TTL_S
        with self._lock:
            if len(self._cache) >= MAX_CACHED:
                self._cache.pop(next(iter(self._cache)))
            self._cache[url] = (self._clock() + ttl, answer)
        if isinstance(answer, DocumentRefused):
            raise answer
        return answer

    def _fetch(self, url: str) -> ClientDocument:
        host = _document_host(url)
        rules = self._rules
        try:
            context = ssl.create_default_context(cafile=rules.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise DocumentRefused("the trust store for metadata documents cannot be read") from exc
        backend = PinnedNetworkBackend(
            host, rules.resolver, allow_private=rules.unsafe_allow_private_addresses
        )
        deadline = time.monotonic() + rules.timeout_s
        client = httpx.Client(
            transport=PinnedTransport(context, backend),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(rules.timeout_s),
        )
        try:
            with request_deadline(deadline), client:
                body = _read_bounded(client, url, rules.max_bytes)
        except AddressRefused as exc:
            raise DocumentRefused(f"the metadata document's host is {exc.reason}") from exc
        except NameNotResolved as exc:
            raise DocumentRefused("the metadata document's host does not resolve") from exc
        except (httpx.TimeoutException, httpcore.TimeoutException) as exc:
            raise DocumentRefused("the metadata document took too long") from exc
        except (httpx.HTTPError, httpcore.NetworkError, ssl.SSLError, OSError) as exc:
            raise DocumentRefused("the metadata document could not be fetched") from exc
        return _document(url, body)


def _document_host(url: str) -> str:
    """The host to connect to, read from ``url`` the one way a browser reads it: an exact URL
    (:mod:`safeport.shared.exact_urls`), https, with a path."""
    try:
        parts = exact_url(url)
    except UrlRefused as exc:
        raise DocumentRefused(f"the client id is refused: {exc.reason}") from exc
    if parts.scheme != "https":
        raise DocumentRefused("a metadata document must be served over https")
    if parts.path == "/" or len(url) > 512:
        raise DocumentRefused("a client id URL needs a path and at most 512 characters")
    return parts.hostname


def _read_bounded(client: httpx.Client, url: str, limit: int) -> bytes:
    with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
        if response.status_code != 200:
            raise DocumentRefused("the metadata document's server did not answer 200")
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise DocumentRefused("the metadata document is too large")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_raw():
            size += len(chunk)
            if size > limit:
                raise DocumentRefused("the metadata document is too large")
            chunks.append(chunk)
        return b"".join(chunks)


def _document(url: str, body: bytes) -> ClientDocument:
    try:
        data = loads_object(body, max_bytes=len(body))  # its size was bounded as it was read
    except JsonRefused as exc:
        raise DocumentRefused("the metadata document is not a JSON object") from exc
    if data.get("client_id") != url:
        raise DocumentRefused("the metadata document's client_id is not its own URL")
    problem = registration_problem(data)
    if problem is not None:
        raise DocumentRefused(f"the metadata document is not usable: {problem.description}")
    auth = data.get("token_endpoint_auth_method", "none")
    if auth != "none":
        raise DocumentRefused("a metadata document client must be public (auth method none)")
    return ClientDocument(
        client_id=url,
        name=client_name_of(data, _host_of(url)),
        redirect_uris=tuple(data["redirect_uris"]),
    )


def _host_of(url: str) -> str:
    return exact_url(url).authority  # the URL was checked before it was fetched
