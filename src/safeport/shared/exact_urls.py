"""URLs read one way only: a URL the gateway stores, matches or fetches is the one a browser
would go to, written exactly as the browser writes it (pure: no I/O).

Python's ``urlsplit`` and a browser disagree on many strings: ``http://[::1].evil/cb`` is the
loopback address to ``urlsplit`` (``hostname`` ``::1``) and no URL at all to a browser;
``http://0x7f.1/`` is a name to one and ``127.0.0.1`` to the other; a backslash, a tab or a
percent-encoded host byte is rewritten by the browser before it goes anywhere. A rule that reads
one parser's answer while the browser follows the other's can be walked around.

So a URL is parsed by the WHATWG URL Standard -- the parser browsers use, through ``ada-url``
(the ada library Node.js ships, with Python bindings) -- and accepted only if the standard's
serialisation of it is the text itself, byte for byte. Whatever the browser would rewrite (upper
case, a default or zero-padded port, an IPv4 address in decimal, octal, hex or short form, a
percent-encoded or non-ASCII host, a backslash, a dot segment, a missing path) is refused, not
normalised: what is stored, what is compared at ``/authorize`` and what a card shows are then
the same string, and the client learns to send that one. On top of the standard: only http and
https, no credentials, no fragment, a name with no empty label and no trailing dot (``localhost.``
is another origin, and a search domain may resolve it), punycode labels that decode, port 1-65535.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import ada_url
import idna

MAX_URL_CHARS = 2000
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_HOST_NAME, _HOST_IPV4, _HOST_IPV6 = 0, 1, 2  # ada_url.HostType


class UrlRefused(ValueError):
    """Why a URL cannot be used: a fixed sentence, never the URL itself."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ExactUrl:
    """A URL whose text is its own WHATWG serialisation (see the module's rules)."""

    text: str
    scheme: Literal["http", "https"]
    host: str  # a lower-case ASCII name, a dotted-quad IPv4 address, or ``[IPv6]``
    port: int | None  # None: the scheme's default
    path: str
    query: str  # "" or starting with "?"

    @property
    def authority(self) -> str:
        """Host and port, as a person compares them (what a card shows of the URL)."""
        return self.host if self.port is None else f"{self.host}:{self.port}"

    @property
    def hostname(self) -> str:
        """The host for a resolver or a socket: an IPv6 address without its brackets."""
        return self.host[1:-1] if self.host.startswith("[") else self.host


def exact_url(text: str) -> ExactUrl:
    """``text`` as an :class:`ExactUrl`, or :class:`UrlRefused` saying which rule it breaks."""
    if len(text) > MAX_URL_CHARS:
        raise UrlRefused("the URL is too long")
    if not (text.isascii() and text.isprintable()) or " " in text or "\\" in text:
        raise UrlRefused(
            "the URL holds a blank, a control character, a backslash or a character outside "
            "ASCII (write a name in its punycode form and percent-encode the rest)"
        )
    try:
        parsed = ada_url.URL(text)
    except ValueError as exc:
        raise UrlRefused("the URL is not one a browser can read") from exc
    if parsed.protocol not in ("http:", "https:"):
        raise UrlRefused("the URL must be http or https")
    if parsed.href != text:
        raise UrlRefused(
            "the URL is not written the way a browser writes it (lower-case scheme and host, "
            "no default or zero-padded port, an IPv4 address as four decimal numbers, a path)"
        )
    if parsed.username or parsed.password:
        raise UrlRefused("the URL may not hold credentials")
    if parsed.hash or "#" in text:
        raise UrlRefused("the URL may not hold a fragment")
    host = parsed.hostname
    if parsed.host_type == _HOST_NAME:
        _check_name(host)
    elif parsed.host_type not in (_HOST_IPV4, _HOST_IPV6):
        raise UrlRefused("the URL's host is not a name or an IP address")
    port = int(parsed.port) if parsed.port else None
    if port == 0:
        raise UrlRefused("the URL's port must be 1 to 65535")
    return ExactUrl(
        text=text,
        scheme="https" if parsed.protocol == "https:" else "http",
        host=host,
        port=port,
        path=parsed.pathname,
        query=parsed.search,
    )


def browser_origin(text: str) -> ExactUrl:
    """An origin a person typed (``--public-url``): read by the WHATWG parser as a browser would
    (so upper case or a default port are written its way, not refused), then held to the rules
    of :func:`exact_url` with the path ``/`` and nothing after it. Never urlsplit's reading: it
    would turn ``https://[::1].evil`` into the loopback origin."""
    typed = text.strip()
    if not (typed.isascii() and typed.isprintable()) or " " in typed or "\\" in typed:
        raise UrlRefused("the URL holds a blank, a control character, a backslash or non-ASCII")
    try:
        parsed = ada_url.URL(typed)
    except ValueError as exc:
        raise UrlRefused("the URL is not one a browser can read") from exc
    if parsed.username or parsed.password or parsed.hash or "#" in typed:
        raise UrlRefused("the URL may not hold credentials or a fragment")
    if parsed.pathname != "/" or parsed.search:
        raise UrlRefused("the URL is an origin only, with no path or query")
    return exact_url(parsed.href)


def _check_name(host: str) -> None:
    labels = host.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise UrlRefused(
            "the URL's host name needs letters, digits and inner hyphens in every label, "
            "with no empty label and no trailing dot"
        )
    for label in labels:
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except idna.IDNAError as exc:
                raise UrlRefused(
                    "the URL's host has a punycode label that does not decode"
                ) from exc
