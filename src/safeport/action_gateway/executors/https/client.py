"""Run one declared HTTPS operation with the credential injected, on a pinned address.

Connections come from :mod:`pinned_network` (one DNS lookup per connection, every address
checked, TLS verified for the service's name) and every wait on them is bounded by the request's
one deadline (:mod:`deadline_stream`). Bodies are asked for and read uncompressed only, so a
small compressed answer can never expand past the cap in memory. Redirects are never followed,
environment proxies are ignored, response headers are never read into a result, and every httpx,
httpcore, ssl and socket exception becomes an :class:`ActionError` in
:func:`translate_http_errors`.
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import re
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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
from safeport.action_gateway.executors.https.response_contract import (
    contains_credential,
    credential_forms,
    extract_fields,
    refuse_credential_echo,
)
from safeport.action_gateway.executors.https.target import normalise_host
from safeport.action_gateway.executors.https.tls import caused_by_tls, tls_context
from safeport.action_gateway.executors.https.trust_files import UntrustedFile, check_trust_file
from safeport.action_gateway.executors.interface import ActionError, HttpAction, RequestTarget
from safeport.action_gateway.executors.prepare import HEADER_VALUE, credential_header_name
from safeport.shared.http_deadline import request_deadline
from safeport.shared.schemas.config import HttpService
from safeport.shared.schemas.wire import HttpResult
from safeport.vault.secrets import BasicSecret, TokenSecret

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# A credential sent as (part of) a header must not start or end with whitespace: HTTP stacks
# refuse such a value with an exception whose text quotes it.
_HEADER_CREDENTIAL = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")
_PRIVATE_HINT = "allow private addresses only for a service that really lives on a private network"
_PRINTABLE_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}$")


class _WithoutServerText(logging.Filter):
    """Keep text the server chose out of the HTTP libraries' log records.

    httpcore's DEBUG trace quotes the response headers and the parser's errors (which quote the
    offending bytes), httpx's INFO line the reason phrase: a server that echoes what it was sent
    can put the credential in any of them, and logs outlive the call.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if record.name == "httpx":
            if not message.startswith("HTTP Request:"):
                return True
            if isinstance(record.args, tuple) and len(record.args) == 5:
                record.msg, record.args = 'HTTP Request: %s %s "%s %d"', record.args[:4]
                return True
            return False  # a format this filter does not know: drop rather than guess
        # httpcore.http11 records are "<event>.<stage> name=value…": keep the event only.
        record.msg, record.args = message.split(" ", 1)[0], ()
        return True


_SERVER_TEXT_FILTER = _WithoutServerText()
log = logging.getLogger("safeport.gateway")
logging.getLogger("httpx").addFilter(_SERVER_TEXT_FILTER)
logging.getLogger("httpcore.http11").addFilter(_SERVER_TEXT_FILTER)


class HttpsExecutor:
    def __init__(
        self, resolver: Resolver = system_resolver, *, trust_owners: frozenset[int]
    ) -> None:
        """``trust_owners``: the uids that may own a ``ca_file`` and the folders above it."""
        self._resolver = resolver
        self._trust_owners = trust_owners
        self._clients: dict[tuple[object, ...], tuple[httpx.Client, PinnedTransport]] = {}
        self._lock = threading.Lock()

    def request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
        service = action.service
        sid = action.service_id
        target = action.target  # prepared before approval; sent exactly as the card showed it
        header_name, header_value, forms = credential_header(service, secret, service_id=sid)
        if header_name.lower() != action.credential_header.lower():
            raise ActionError("invalid_target", "the credential header differs from the card's")
        headers = dict(action.headers)
        headers[header_name] = header_value
        client, transport = self._client(sid, service, target)
        deadline = time.monotonic() + service.timeout_s
        with request_deadline(deadline), translate_http_errors(sid):
            request = client.build_request(
                target.method, target.url, headers=headers, content=target.body
            )
            response = client.send(request, stream=True)
            try:
                return _read_result(sid, service, action, response, deadline, forms)
            finally:
                response.close()
                transport.drop_desynchronised()

    def close_all(self) -> None:
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client, _ in clients:
            client.close()

    def _client(
        self, service_id: str, service: HttpService, target: RequestTarget
    ) -> tuple[httpx.Client, PinnedTransport]:
        key = (
            service_id,
            target.origin,
            service.ca_file,
            service.ca_pem,
            service.allow_private_addresses,
            service.timeout_s,
        )
        with self._lock:
            pair = self._clients.get(key)
            if pair is None:
                if service.ca_file is not None:
                    _check_ca_file(service_id, service.ca_file, self._trust_owners)
                context = tls_context(service_id, service.ca_file, service.ca_pem)
                backend = PinnedNetworkBackend(
                    target.origin.host,
                    self._resolver,
                    allow_private=service.allow_private_addresses,
                )
                transport = PinnedTransport(context, backend)
                client = httpx.Client(
                    transport=transport,
                    follow_redirects=False,
                    trust_env=False,
                    timeout=httpx.Timeout(service.timeout_s),
                )
                pair = self._clients[key] = (client, transport)
            return pair


def credential_header(
    service: HttpService, secret: TokenSecret | BasicSecret, *, service_id: str
) -> tuple[str, str, list[str]]:
    """The header that carries the credential, and every form of it a response must not echo."""
    if service.auth == "basic":
        if not isinstance(secret, BasicSecret):
            raise ActionError("invalid_target", f"service {service_id!r} needs a basic credential")
        password = _header_text(secret.password.reveal(), service_id, HEADER_VALUE)
        pair = f"{secret.username}:{password}"
        encoded = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        forms = credential_forms(password) + credential_forms(pair) + [encoded]
        return credential_header_name(service), f"Basic {encoded}", forms
    if not isinstance(secret, TokenSecret):
        raise ActionError("invalid_target", f"service {service_id!r} needs a token credential")
    token = _header_text(secret.token.reveal(), service_id, _HEADER_CREDENTIAL)
    forms = credential_forms(token)
    if service.auth == "bearer":
        return "Authorization", f"Bearer {token}", forms
    return credential_header_name(service), token, forms


def _check_ca_file(service_id: str, ca_file: str, owners: frozenset[int]) -> None:
    try:
        check_trust_file(ca_file, owners)
    except UntrustedFile as exc:
        # The details (which step, its owner and mode) go to the gateway's own log only: read
        # with the gateway's rights, they would tell whoever wrote the policy facts about files
        # they cannot see.
        log.warning("the ca_file of service %r is refused: %s", service_id, exc.message)
        raise ActionError(
            "tls_failed",
            f"the ca_file of service {service_id!r} is not a file only root or the gateway's "
            "account controls; the gateway's log says which part",
            hint="keep a service's CA where only root (or the gateway's account) can change it, "
            "e.g. /usr/local/share/ca-certificates",
        ) from None


@contextmanager
def translate_http_errors(service_id: str) -> Iterator[None]:
    """The one place httpx, httpcore, ssl and socket exceptions become :class:`ActionError`."""
    try:
        yield
    except ActionError:
        raise
    except AddressRefused as exc:
        raise ActionError(
            "address_refused",
            f"service {service_id!r} would connect to {exc.reason}, which it may not reach",
            hint=_PRIVATE_HINT if exc.private else None,
        ) from exc
    except NameNotResolved as exc:
        raise ActionError(
            "unreachable", f"the name of service {service_id!r} does not resolve"
        ) from exc
    except httpx.TimeoutException as exc:
        # httpcore closes a connection whose exchange a timeout cut short (never pooled again);
        # a wait for a pooled connection had none to close.
        raise ActionError(
            "timeout",
            f"service {service_id!r} did not answer in time",
            stopped_by=None if isinstance(exc, httpx.PoolTimeout) else "close",
        ) from exc
    except (httpx.ConnectError, ssl.SSLError) as exc:
        if caused_by_tls(exc):
            raise ActionError(
                "tls_failed", f"the TLS handshake with service {service_id!r} failed verification"
            ) from exc
        raise ActionError("unreachable", f"service {service_id!r} is unreachable") from exc
    except (httpx.RemoteProtocolError, httpx.DecodingError) as exc:
        _withhold_server_text(exc)
        raise ActionError(
            "bad_response", f"service {service_id!r} broke the HTTP protocol"
        ) from exc
    except (httpx.HTTPError, OSError) as exc:
        raise ActionError(
            "unreachable", f"the connection to service {service_id!r} failed"
        ) from exc
    except h11.ProtocolError as exc:
        # h11 raises directly when our own side of the exchange breaks the protocol.
        _withhold_server_text(exc)
        raise ActionError(
            "invalid_target", f"the request to service {service_id!r} broke the HTTP protocol"
        ) from exc


def _read_result(
    service_id: str,
    service: HttpService,
    action: HttpAction,
    response: httpx.Response,
    deadline: float,
    forms: list[str],
) -> HttpResult:
    status = response.status_code
    if status in _REDIRECTS or (300 <= status < 400 and "location" in response.headers):
        raise ActionError(
            "redirect_blocked",
            f"service {service_id!r} answered {status} redirecting to "
            f"{_redirect_host(response, forms)}; redirects are never followed",
        )
    if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
        # We asked for `identity`; decoding anyway would let a small body expand unchecked.
        raise ActionError("bad_response", f"service {service_id!r} answered with a compressed body")
    body = bytearray()
    for chunk in response.iter_raw():
        body += chunk
        if len(body) > service.max_response_bytes:
            raise ActionError(
                "bad_response",
                f"service {service_id!r} answered with more than "
                f"{service.max_response_bytes} bytes",
            )
        if time.monotonic() > deadline:
            # The response is closed unread (request()'s finally): httpcore closes the
            # connection rather than pool one whose answer did not end.
            raise ActionError(
                "timeout",
                f"service {service_id!r} did not finish answering in time",
                stopped_by="close",
            )
    fields_declared = action.operation.response_fields
    if not (200 <= status < 300) or not fields_declared:
        # An error answer does not follow the operation's response contract; only its status
        # is passed on.
        return HttpResult(status=status, fields={})
    fields: dict[str, Any] = extract_fields(bytes(body), fields_declared, service_id=service_id)
    refuse_credential_echo(fields, forms, service_id=service_id)
    return HttpResult(status=status, fields=fields)


def _redirect_host(response: httpx.Response, forms: list[str]) -> str:
    """Only the target's host (or address) is reported, never its path or query.

    A server that echoes what it was sent could put the credential in the host itself, so a
    host holding any form of it (host names are lowercased on the way) is not shown.
    """
    location = response.headers.get("location")
    if not location:
        return "no location"
    try:
        host = response.url.join(location).host
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return "an unparseable location"
    try:
        return f"address {ipaddress.ip_address(host.strip('[]'))}"
    except ValueError:
        pass
    try:
        name = normalise_host(host)
    except ActionError:
        return "a host that is not a plain name"
    if not _PRINTABLE_HOST.match(name) or contains_credential(name, forms):
        return "a host that is not a plain name"
    return f"host {name}"


def _header_text(value: bytes, service_id: str, allowed: re.Pattern[str]) -> str:
    try:
        text = value.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    if not text or not allowed.match(text):
        # Never echo the value: say only that it cannot be a header.
        raise ActionError(
            "invalid_target",
            f"the credential of service {service_id!r} is not a valid header value",
        )
    return text


def _withhold_server_text(exc: BaseException) -> None:
    """Blank the messages along a protocol error's chain: h11 quotes the bytes it refused.

    An echoing server can put the credential in a status or header line it knows the parser
    will refuse; the chain stays (the type says what broke), its text does not.
    """
    seen: BaseException | None = exc
    while seen is not None:
        seen.args = ("the server's bytes are not shown",)
        seen = seen.__cause__ or seen.__context__
