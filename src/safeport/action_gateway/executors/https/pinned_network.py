"""The one network seam of the HTTPS executor: connect only to checked addresses of one host.

When httpcore asks for a TCP connection, :class:`PinnedNetworkBackend` resolves the service's own
name once (through an injectable resolver), checks every address with :mod:`address_policy`, and
connects to a checked address. TLS is then started by httpcore with SNI and certificate
verification for the *name*, and the Host header carries the name, so a DNS answer that changes
between check and connect (rebinding) changes nothing: there is no second lookup.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Sequence

import httpcore
import httpx

from safeport.action_gateway.executors.https.address_policy import IpAddress, check_addresses
from safeport.shared.http_deadline import DeadlineBackend

Resolver = Callable[[str, int], Sequence[str]]
"""``(host, port) -> addresses`` as strings; the one DNS lookup made per new connection."""


def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (getaddrinfo), TCP answers only, order kept."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressRefused(Exception):
    """The connection would reach an address (or host) the service may not reach."""

    def __init__(self, reason: str, *, private: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.private = private


class NameNotResolved(Exception):
    """The service's name did not resolve."""


class PinnedNetworkBackend(httpcore.NetworkBackend):
    """Connect only to checked addresses of the one expected host."""

    def __init__(self, host: str, resolver: Resolver, *, allow_private: bool) -> None:
        self._host = host
        self._resolver = resolver
        self._allow_private = allow_private
        self._inner = DeadlineBackend()  # every wait bounded by the request's deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        if host != self._host:
            raise AddressRefused("another host than its own")
        addresses = self._resolve(host, port)
        allowed, refusal = check_addresses(addresses, allow_private=self._allow_private)
        if refusal is not None:
            raise AddressRefused(refusal.reason, private=refusal.verdict == "private")
        last: Exception | None = None
        for address in allowed:
            try:
                return self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise AddressRefused("a unix socket")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _resolve(self, host: str, port: int) -> list[IpAddress]:
        try:
            answers = self._resolver(host, port)
            addresses = [ipaddress.ip_address(answer) for answer in answers]
        except (OSError, ValueError) as exc:
            raise NameNotResolved from exc
        if not addresses:
            raise NameNotResolved
        return addresses


class PinnedTransport(httpx.HTTPTransport):
    """httpx's transport with its connection pool built on :class:`PinnedNetworkBackend`."""

    def __init__(self, ssl_context: ssl.SSLContext, backend: PinnedNetworkBackend) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx does not expose the network backend; the pool it builds is replaced by the
        # same pool on our backend (the rebinding test fails if this ever stops working).
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            network_backend=backend,
            max_connections=16,
            max_keepalive_connections=4,
            keepalive_expiry=60.0,
            http1=True,
            http2=False,
        )

    def drop_desynchronised(self) -> None:
        """Close idle connections whose server sent bytes beyond the response it owed.

        h11 keeps such bytes and would parse them as the answer to the *next* request on the
        connection (a response smuggled ahead of its request); httpcore checks only the socket,
        not that buffer. httpcore exposes neither, hence the guarded private look-up; the
        smuggling test fails if it ever stops finding them.
        """
        for connection in list(self._pool.connections):
            h11_state = getattr(getattr(connection, "_connection", None), "_h11_state", None)
            if h11_state is not None and connection.is_idle() and h11_state.trailing_data[0]:
                connection.close()
