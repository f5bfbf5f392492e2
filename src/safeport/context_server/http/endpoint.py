"""Where the HTTP server listens and the URL remote clients reach it by (pure decisions).

A bind outside loopback is reachable by anyone on the network: it is refused without TLS, since
bearer tokens would cross the wire in the clear. On loopback the tunnel (cloudflared, Tailscale
Funnel, ngrok, nginx) terminates TLS and ``--public-url`` names what the client sees.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from safeport.errors import UsageError
from safeport.shared.exact_urls import UrlRefused, browser_origin

MCP_PATH = "/mcp"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class HttpEndpoint:
    """The bind address, the public URL (issuer; the MCP endpoint is ``public_url + /mcp``),
    and the TLS files when the server terminates TLS itself."""

    host: str
    port: int
    public_url: str
    tls_cert: Path | None = None
    tls_key: Path | None = None

    @property
    def resource(self) -> str:
        """The access tokens' audience: the public MCP endpoint."""
        return self.public_url + MCP_PATH

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_endpoint(
    bind: str,
    public_url: str | None = None,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
) -> HttpEndpoint:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) and the options, checked together."""
    host, sep, port_text = bind.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), not {bind!r}")
    host = host.strip("[]")
    port = int(port_text)
    if (tls_cert is None) != (tls_key is None):
        raise UsageError("--tls-cert and --tls-key go together")
    tls = tls_cert is not None
    if not is_loopback(host) and not tls:
        raise UsageError(
            f"refusing to listen on {host} without TLS: a non-loopback address is reachable "
            "from the network and bearer tokens would cross it in the clear",
            hint="give --tls-cert and --tls-key, or bind 127.0.0.1 and put a tunnel in front",
        )
    if public_url is None:
        shown = f"[{host}]" if ":" in host else host
        public_url = f"{'https' if tls else 'http'}://{shown}:{port}"
    return HttpEndpoint(host, port, normal_public_url(public_url), tls_cert, tls_key)


def normal_public_url(url: str) -> str:
    """``scheme://host[:port]`` as a browser writes it, no path: the issuer and the base of every
    endpoint. A path would move the well-known documents clients look for at the origin. Read
    by the browser's own rules (:func:`~safeport.shared.exact_urls.browser_origin`), so the
    issuer clients compare byte for byte is the origin they actually reach."""
    try:
        parts = browser_origin(url)
    except UrlRefused as exc:
        raise UsageError(f"--public-url is refused: {exc.reason}") from exc
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise UsageError(
            "--public-url must be https unless it names this machine's loopback",
            hint="point a TLS tunnel at the server and give its https URL",
        )
    return f"{parts.scheme}://{parts.authority}"


def host_header_values(endpoint: HttpEndpoint) -> frozenset[str]:
    """The ``Host`` values a legitimate request carries: the public URL's authority and the
    loopback names at the bound port (a tunnel on this machine may pass either)."""
    public = urlsplit(endpoint.public_url)
    values = {public.netloc}
    if public.port is None:  # a client may spell the default port out
        values.add(f"{public.netloc}:{443 if public.scheme == 'https' else 80}")
    for name in ("127.0.0.1", "localhost", "[::1]"):
        values.add(f"{name}:{endpoint.port}")
    return frozenset(values)


def origin_values(endpoint: HttpEndpoint) -> frozenset[str]:
    """The ``Origin`` values a browser on a legitimate page sends: the public URL's origin and
    the loopback origins at the bound port (the authorization page itself)."""
    scheme = "https" if endpoint.tls_cert else "http"
    values = {endpoint.public_url}
    for name in ("127.0.0.1", "localhost", "[::1]"):
        values.add(f"{scheme}://{name}:{endpoint.port}")
    return frozenset(values)
