"""Build the exact URL and body of an HTTPS operation, and pin its origin (pure).

The agent chooses only parameter values. Each value is percent-encoded as a *single* path
segment (``/``, ``?``, ``#`` and ``%`` all encoded), a segment that would read as ``.`` or ``..``
is refused (HTTP stacks, httpx included, collapse dot segments) — also when only a server that
decodes again, normalises Unicode, or splits on ``\\`` or ``;`` would read it so — and query
parameters exist only where the operation declares them. The host is compared after IDNA and
lowercase normalisation; userinfo, another port, a trailing dot, an IP literal or a label mixing
scripts (a look-alike such as a Cyrillic letter a in ``api``) are refused. After building, the
URL is parsed again the way httpx will send it and must land on the same origin with the same
bytes.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from urllib.parse import quote, unquote, urlsplit

import httpx
import idna

from safeport.action_gateway.executors.interface import ActionError, RequestTarget, ServiceOrigin
from safeport.action_gateway.policy.arguments import ArgumentRejected, ArgValue, validate_args
from safeport.shared.schemas.config import HttpOperation, HttpService
from safeport.shared.schemas.config_params import PLACEHOLDER

_WHOLE_PLACEHOLDER = re.compile(r"^\{([a-z][a-z0-9_]{0,63})\}$")
# Characters a declared (human-written) path may carry literally: RFC 3986 pchar minus `%`.
_LITERAL_PATH = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@/-]*$")
# What servers and proxies in front of them are known to treat as a path separator after
# decoding: `/`, `\` (Windows stacks, some Java ones) and `;` (path parameters, `..;/`).
_LENIENT_SEPARATORS = re.compile(r"[/\\;]")


@lru_cache(maxsize=256)
def service_origin(base_url: str) -> ServiceOrigin:
    """Parse and pin a service's base URL; raise ``invalid_target`` if it is not a plain name."""
    parts = urlsplit(base_url)
    if parts.scheme != "https":
        raise _invalid("the service's base URL is not https")
    if "@" in parts.netloc:
        raise _invalid("the service's base URL carries userinfo")
    if parts.query or parts.fragment:
        raise _invalid("the service's base URL carries a query or fragment")
    try:
        port = 443 if parts.port is None else parts.port
    except ValueError:
        raise _invalid("the service's base URL has an invalid port") from None
    if port == 0:
        # `:0` is not "the default port"; no service listens there.
        raise _invalid("the service's base URL has an invalid port")
    host = normalise_host(parts.hostname or "")
    base_path = parts.path.rstrip("/")
    if not _LITERAL_PATH.match(base_path) or _has_dot_segment(base_path):
        raise _invalid("the service's base path has characters or segments that are not plain")
    return ServiceOrigin(host=host, port=port, base_path=base_path)


@lru_cache(maxsize=1024)
def normalise_host(host: str) -> str:
    """IDNA (UTS 46) and lowercase; refuse what could name a different machine than it shows."""
    if not host:
        raise _invalid("the host is empty")
    if host.endswith("."):
        # `api.example.com.` is the same DNS name but a different TLS/virtual-host identity.
        raise _invalid("the host has a trailing dot")
    if _is_ip_literal(host):
        raise _invalid("the host is an IP literal; a service must be named by a DNS name")
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii").lower()
    except (idna.IDNAError, UnicodeError):
        raise _invalid("the host is not a valid internationalised domain name") from None
    if ascii_host.endswith("."):
        # The same, reached through a Unicode full stop (U+3002, U+FF0E) that IDNA maps to `.`.
        raise _invalid("the host has a trailing dot")
    if _is_ip_literal(ascii_host):
        # The same, reached through what IDNA maps to digits and dots (fullwidth forms, an
        # ideographic full stop) or drops (a zero-width space).
        raise _invalid("the host is an IP literal; a service must be named by a DNS name")
    for label in ascii_host.split("."):
        if _mixes_scripts(label):
            raise _invalid("the host has a label that mixes scripts (a look-alike name)")
    return ascii_host


def build_target(
    service: HttpService, operation: HttpOperation, args: Mapping[str, object]
) -> RequestTarget:
    """The URL and body for one call, from declared templates and validated values only."""
    try:
        values = validate_args(operation.params, args)
    except ArgumentRejected as exc:
        raise ActionError("invalid_target", exc.message) from None
    origin = service_origin(service.base_url)
    path = origin.base_path + _render_path(operation.path, values)
    query = "&".join(
        f"{quote(name, safe='')}={quote(_substitute(template, values), safe='')}"
        for name, template in operation.query.items()
    )
    raw_path = f"{path}?{query}" if query else path
    port = "" if origin.port == 443 else f":{origin.port}"
    url = f"https://{origin.host}{port}{raw_path}"
    check_on_origin(url, origin, expected_raw_path=raw_path)
    body = None
    if operation.json_body is not None:
        rendered = _render_json(operation.json_body, values)
        body = json.dumps(rendered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return RequestTarget(origin, operation.method, url, raw_path, body)


def check_on_origin(url: str, origin: ServiceOrigin, *, expected_raw_path: str) -> None:
    """Parse ``url`` as httpx will send it; it must hit the pinned origin with these bytes."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise _invalid("the built URL does not parse") from None
    if parsed.scheme != "https" or parsed.userinfo:
        raise _invalid("the built URL is not a plain https URL")
    if normalise_host(parsed.host) != origin.host or (parsed.port or 443) != origin.port:
        raise _invalid("the built URL leaves the service's host or port")
    if parsed.raw_path.decode("ascii") != expected_raw_path:
        raise _invalid("the built URL path was rewritten on parsing")


def _render_path(template: str, values: Mapping[str, ArgValue]) -> str:
    rendered: list[str] = []
    for segment in template.split("/"):
        names = PLACEHOLDER.findall(segment)
        literals = PLACEHOLDER.split(segment)[::2]
        if not all(_LITERAL_PATH.match(text) for text in literals):
            raise _invalid("the declared path has characters that are not plain")
        out = PLACEHOLDER.sub(lambda m: quote(str(values[m.group(1)]), safe=""), segment)
        if names and (out in ("", ".", "..") or _reads_as_dot_segment(unquote(out))):
            raise _invalid("a path argument would form an empty or dot segment")
        rendered.append(out)
    path = "/".join(rendered)
    if _has_dot_segment(path):
        raise _invalid("the declared path has a dot segment")
    return path


def _substitute(template: str, values: Mapping[str, ArgValue]) -> str:
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def _render_json(template: object, values: Mapping[str, ArgValue]) -> object:
    if isinstance(template, str):
        whole = _WHOLE_PLACEHOLDER.match(template)
        if whole:
            return values[whole.group(1)]  # keeps an int an int
        return _substitute(template, values)
    if isinstance(template, dict):
        return {key: _render_json(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [_render_json(value, values) for value in template]
    return template


def _reads_as_dot_segment(text: str) -> bool:
    """Whether a lenient server could see ``.`` or ``..`` in this decoded segment.

    Such a server may percent-decode again (``%2e%2e``), apply Unicode compatibility
    normalisation (fullwidth full stops, U+FF0E) or split on ``\\`` and ``;``.
    """
    for _ in range(3):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    normalised = unicodedata.normalize("NFKC", text)
    return any(
        part in (".", "..")
        for form in (text, normalised)
        for part in _LENIENT_SEPARATORS.split(form)
    )


def _has_dot_segment(path: str) -> bool:
    return any(segment in (".", "..") for segment in path.split("/"))


def _is_ip_literal(host: str) -> bool:
    text = host.strip("[]")
    try:
        ipaddress.ip_address(text)
    except ValueError:
        pass
    else:
        return True
    try:
        # inet_aton also accepts the legacy forms resolvers honour: `2130706433`, `0x7f.1`.
        socket.inet_aton(text)
    except OSError:
        return False
    return True


def _mixes_scripts(ascii_label: str) -> bool:
    if not ascii_label.startswith("xn--"):
        return False
    try:
        unicode_label = idna.decode(ascii_label)
    except (idna.IDNAError, UnicodeError):
        return True
    scripts = {
        unicodedata.name(char, "UNKNOWN").split()[0] for char in unicode_label if char.isalpha()
    }
    return len(scripts) > 1


def _invalid(message: str) -> ActionError:
    return ActionError("invalid_target", message)
