"""The authorization request and its callback, decided without I/O (pure).

PKCE (RFC 7636) is always S256: the verifier is 32 random bytes (43 base64url characters, the
length RFC 7636 section 4.1 recommends) kept as :class:`SecretBytes` and sent only to the token
endpoint. ``state`` ties a callback to the flow that asked for it; ``iss`` (RFC 9207) ties it to
the provider, so a code another provider issued is never sent to this one's token endpoint.

A callback is read once and strictly: a parameter given twice is refused (two readers could pick
different ones), an ``error`` is the provider's or the human's no, and the code is handed back as
a secret, never as text.

The token endpoint's answers are read in :mod:`safeport.action_gateway.oauth.responses` and named
here as well, so callers have one module to import.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from safeport.action_gateway.oauth.endpoints import Endpoints
from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthRefused, provider_words
from safeport.action_gateway.oauth.presets import (
    ACCESS_TYPE_OFFLINE,
    ATLASSIAN_AUDIENCE,
    AUDIENCE,
    SCOPE_SEPARATOR_COMMA,
)
from safeport.action_gateway.oauth.responses import DeviceAuthorization as DeviceAuthorization
from safeport.action_gateway.oauth.responses import DevicePending as DevicePending
from safeport.action_gateway.oauth.responses import ProviderError as ProviderError
from safeport.action_gateway.oauth.responses import TokenGrant as TokenGrant
from safeport.action_gateway.oauth.responses import granted_scopes as granted_scopes
from safeport.action_gateway.oauth.responses import parse_device_poll as parse_device_poll
from safeport.action_gateway.oauth.responses import (
    parse_device_response as parse_device_response,
)
from safeport.action_gateway.oauth.responses import parse_error as parse_error
from safeport.action_gateway.oauth.responses import (
    parse_token_response as parse_token_response,
)
from safeport.action_gateway.oauth.responses import scopes_not_granted as scopes_not_granted
from safeport.vault.secrets import SecretBytes

_VERIFIER_BYTES = 32
_STATE_BYTES = 32
# A callback's query is bounded: a provider's code and state are short, and a flood is refused
# before anything is compared.
MAX_CALLBACK_PARAMS = 16
MAX_CALLBACK_CHARS = 8192


@dataclass(frozen=True, repr=False)
class Pkce:
    verifier: SecretBytes
    challenge: str  # BASE64URL(SHA256(verifier)), sent in the authorization request

    def __repr__(self) -> str:
        return f"Pkce(verifier=<redacted>, challenge={self.challenge!r})"


def pkce_challenge(verifier: SecretBytes) -> str:
    """RFC 7636 section 4.2, S256: the unpadded base64url of the verifier's SHA-256."""
    with verifier.exposed() as view:
        digest = hashlib.sha256(view).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def new_pkce() -> Pkce:
    """A fresh verifier (43 unreserved characters) and its S256 challenge."""
    raw = bytearray(secrets.token_bytes(_VERIFIER_BYTES))
    encoded = bytearray(base64.urlsafe_b64encode(raw).rstrip(b"="))
    raw[:] = bytes(len(raw))
    verifier = SecretBytes(encoded)
    encoded[:] = bytes(len(encoded))
    return Pkce(verifier=verifier, challenge=pkce_challenge(verifier))


def new_state() -> str:
    """An unguessable ``state`` (256 bits, base64url)."""
    return secrets.token_urlsafe(_STATE_BYTES)


def scope_text(scopes: Sequence[str], quirks: frozenset[str]) -> str:
    """The ``scope`` parameter: space separated (RFC 6749), or comma separated for a provider
    that reads it so."""
    return ("," if SCOPE_SEPARATOR_COMMA in quirks else " ").join(scopes)


def authorization_url(
    endpoints: Endpoints,
    client_id: str,
    redirect_uri: str,
    scopes: Sequence[str],
    state: str,
    challenge: str,
    quirks: frozenset[str] | None = None,
) -> str:
    """The URL the human's browser opens: code flow, PKCE S256, ``state``, the provider's quirks."""
    if endpoints.authorization is None:
        raise OAuthBadResponse("the provider has no authorization endpoint (try --device)")
    quirks = endpoints.quirks if quirks is None else quirks
    params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("state", state),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ]
    if scopes:
        params.append(("scope", scope_text(scopes, quirks)))
    if ACCESS_TYPE_OFFLINE in quirks:
        params.append(("access_type", "offline"))
    if AUDIENCE in quirks:
        params.append(("audience", ATLASSIAN_AUDIENCE))
    if quirks & {ACCESS_TYPE_OFFLINE, AUDIENCE}:
        # Both ask for consent every time: without it Google issues no new refresh token, and
        # Atlassian's documented request carries it.
        params.append(("prompt", "consent"))
    base = endpoints.authorization
    joiner = "&" if urlsplit(base).query else "?"
    return base + joiner + urlencode(params)


def parse_callback_query(query: str) -> dict[str, str]:
    """A redirect's raw query string as one value per name; a name given twice, a blank name or
    an oversized query is refused."""
    if len(query) > MAX_CALLBACK_CHARS:
        raise OAuthRefused("the authorization response is too long")
    pairs = parse_qsl(query, keep_blank_values=True)
    return _one_each(pairs)


def check_callback(
    query: Mapping[str, str] | Sequence[tuple[str, str]],
    *,
    state: str,
    issuer: str | None,
    iss_required: bool,
) -> SecretBytes:
    """The authorization code of a callback that is this flow's answer, or :class:`OAuthRefused`.

    ``query`` may be pairs as they came (a repeated name is refused) or a mapping already read
    one value per name. ``iss`` is compared whenever it is given and ``issuer`` is known; it
    must be given when the provider said it sends it (``iss_required``)."""
    values = _one_each(list(query.items()) if isinstance(query, Mapping) else list(query))
    got_state = values.get("state")
    if got_state is None:
        raise OAuthRefused("the authorization response has no state: it is not this flow's")
    if not hmac.compare_digest(got_state.encode("utf-8"), state.encode("utf-8")):
        raise OAuthRefused("the authorization response's state is not this flow's")
    iss = values.get("iss")
    if iss is None and iss_required:
        raise OAuthRefused("the authorization response has no iss, and the provider sends one")
    if iss is not None and issuer is not None and iss != issuer:
        raise OAuthRefused("the authorization response comes from another issuer (iss)")
    error = values.get("error")
    if error is not None:
        words = provider_words(values.get("error_description"))
        said = f"the provider refused the authorization ({_error_name(error)})"
        raise OAuthRefused(f"{said}: {words}" if words else said, error=_error_name(error))
    code = values.get("code")
    if not code:
        raise OAuthRefused("the authorization response has no code")
    return SecretBytes(code.encode("utf-8"))


def _one_each(pairs: list[tuple[str, str]]) -> dict[str, str]:
    if len(pairs) > MAX_CALLBACK_PARAMS:
        raise OAuthRefused("the authorization response has too many parameters")
    values: dict[str, str] = {}
    for name, value in pairs:
        if not name:
            raise OAuthRefused("the authorization response has a parameter without a name")
        if name in values:
            # Never the value: a repeated `code` is a code.
            raise OAuthRefused(f"the authorization response gives {_error_name(name)} twice")
        values[name] = value
    return values


def _error_name(text: str) -> str:
    """An RFC 6749 error code as it may be shown: its own characters only, bounded."""
    kept = "".join(c for c in text[:64] if c.isascii() and (c.isalnum() or c in "_.-:"))
    return kept or "unnamed"
