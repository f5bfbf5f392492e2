"""What an authorization server decides from the request alone (pure: no I/O, no clock).

Each rule answers with a typed problem or nothing. The orchestration in
:mod:`.authorization_server` looks things up and calls these; nothing here trusts the relay that
carried the request, and every problem is a fixed sentence (the client's values are never echoed
back into an error page, a log or the journal).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

from safeport.shared.exact_urls import UrlRefused, exact_url

# Unambiguous letters only (no vowels: no words; no 0/O, 1/I/L): read aloud or compared at a
# glance between the browser page and the card.
USER_CODE_ALPHABET = "BCDFGHJKMNPQRSTVWXZ"
USER_CODE_LENGTH = 8
# RFC 7636: 43 to 128 characters of the unreserved set; S256 of that is 43 base64url characters.
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
MAX_REDIRECT_URIS = 8


@dataclass(frozen=True)
class Problem:
    """An OAuth error code and a fixed description (never the client's own text)."""

    error: str
    description: str


@dataclass(frozen=True)
class AuthorizeAsk:
    """An authorization request whose client and redirect URI are known good; what it asks."""

    client_id: str
    redirect_uri: str
    state: str | None
    code_challenge: str
    resource: str
    # Named in the request (then the token request must repeat it), or the client's only one.
    redirect_named: bool = True


def issuer_of(public_url: str) -> str:
    return public_url.rstrip("/")


def resource_of(public_url: str) -> str:
    """The MCP endpoint the tokens are for (RFC 8707 resource, the tokens' ``aud``)."""
    return f"{issuer_of(public_url)}/mcp"


def server_metadata(public_url: str) -> dict[str, object]:
    """RFC 8414 metadata of the issuer at ``public_url``."""
    issuer = issuer_of(public_url)
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "registration_endpoint": f"{issuer}/register",
        "revocation_endpoint": f"{issuer}/revoke",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
        "scopes_supported": [],
    }


def redirect_uri_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be registered as a redirect URI (None: it can).

    It must be an exact URL (:mod:`safeport.shared.exact_urls`: read one way by this rule and by
    the browser, and written as the browser writes it, so the string stored, the one matched at
    ``/authorize`` and the host the card shows are one); then https anywhere, or http on the
    loopback interface only (native apps, RFC 8252), named exactly ``localhost``, ``127.0.0.1``
    or ``[::1]``. Never a fragment or credentials, which would let a code travel where the client
    does not control it."""
    try:
        url = exact_url(uri)
    except UrlRefused as exc:
        return f"a redirect URI is refused: {exc.reason}"
    if url.scheme == "https" or url.host in _LOOPBACK_HOSTS:
        return None
    return "a redirect URI must be https, or http on localhost / 127.0.0.1 / [::1]"


def registration_problem(metadata: Mapping[str, object]) -> Problem | None:
    """RFC 7591: the parts of a client's registration this server acts on."""
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        return Problem("invalid_redirect_uri", "one to eight redirect_uris are required")
    for uri in uris:
        problem = redirect_uri_problem(uri) if isinstance(uri, str) else "not a string"
        if problem is not None:
            return Problem("invalid_redirect_uri", problem)
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants:
        return Problem("invalid_client_metadata", "grant_types must include authorization_code")
    if metadata.get("response_types", ["code"]) != ["code"]:
        return Problem("invalid_client_metadata", 'response_types must be ["code"]')
    name = metadata.get("client_name", "")
    if not isinstance(name, str) or len(name) > 100:
        return Problem("invalid_client_metadata", "client_name must be a short string")
    return None


def client_name_of(metadata: Mapping[str, object], fallback: str) -> str:
    name = metadata.get("client_name")
    return name.strip()[:100] if isinstance(name, str) and name.strip() else fallback


def authorize_client_problem(
    params: Mapping[str, str], registered_redirects: tuple[str, ...] | None
) -> Problem | None:
    """The checks made before anything may be redirected to: a known client, and a redirect URI
    that is exactly one it registered (or its only one, when the request names none). A
    failure here is shown as an error page, never sent to the URI (no open redirect)."""
    if registered_redirects is None:
        return Problem("invalid_client", "this client is unknown")
    asked = params.get("redirect_uri")
    if asked is None and len(registered_redirects) != 1:
        return Problem("invalid_request", "redirect_uri is required")
    # As bytes: compare_digest refuses str outside ASCII, and a URI may hold any character.
    wanted = (asked or registered_redirects[0]).encode("utf-8", "surrogatepass")
    if not any(
        hmac.compare_digest(wanted, known.encode("utf-8", "surrogatepass"))
        for known in registered_redirects
    ):
        return Problem("invalid_request", "redirect_uri is not one this client registered")
    if redirect_uri_problem(wanted.decode("utf-8", "surrogatepass")) is not None:
        # Registered before the exact rule: never sent a code, whatever the record says.
        return Problem("invalid_request", "redirect_uri is no longer accepted; register again")
    return None


def authorize_request_problem(params: Mapping[str, str], public_url: str) -> Problem | None:
    """The checks whose failure the client's (already checked) redirect URI may receive."""
    if params.get("response_type") != "code":
        return Problem("unsupported_response_type", "only response_type=code is supported")
    method = params.get("code_challenge_method")
    challenge = params.get("code_challenge")
    if challenge is None:
        return Problem("invalid_request", "PKCE is required: code_challenge is missing")
    if method != "S256":
        return Problem("invalid_request", "PKCE code_challenge_method must be S256")
    if not _CHALLENGE.fullmatch(challenge):
        return Problem("invalid_request", "code_challenge is not an S256 challenge")
    if params.get("resource") != resource_of(public_url):
        return Problem("invalid_target", "resource must be this server's MCP endpoint")
    if len(params.get("state", "")) > 1024:
        return Problem("invalid_request", "state is too long")
    return None


def authorize_ask(params: Mapping[str, str], redirect_uri: str) -> AuthorizeAsk:
    return AuthorizeAsk(
        client_id=params["client_id"],
        redirect_uri=redirect_uri,
        state=params.get("state"),
        code_challenge=params["code_challenge"],
        resource=params["resource"],
        redirect_named="redirect_uri" in params,
    )


def granted_profile(asked: str, *, actions_on: bool) -> str:
    """The profile a grant carries: the agent profile only while `[remote] actions` is on.

    A grant outlives the policy it was given under (the client refreshes without a card), so
    an agent-profile grant given while actions were off would let the client propose the day a
    human turns them on, without anyone being asked. Given while off, it reads only; after
    actions are turned on, the client asks again and the human sees a card for the agent
    profile."""
    return asked if asked != "agent" or actions_on else "reader"


def pkce_matches(verifier: str, challenge: str) -> bool:
    if not _VERIFIER.fullmatch(verifier):
        return False
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    return hmac.compare_digest(computed, challenge)


def redirect_location(
    redirect_uri: str,
    issuer: str,
    state: str | None,
    outcome: Literal["code", "error"],
    value: str,
    description: str | None = None,
) -> str:
    """The redirect URI with the answer, ``state`` and ``iss`` (RFC 9207) added to its query."""
    fields: list[tuple[str, str]] = [(outcome, value)]
    if description is not None:
        fields.append(("error_description", description))
    if state is not None:
        fields.append(("state", state))
    fields.append(("iss", issuer))
    # The URI is exact (no fragment), so all after its first "?" is its query; an empty one
    # (which urlsplit reads as no query at all) is joined, never followed by a second "?".
    base, _, query = redirect_uri.partition("?")
    head = f"{base}?{query}&" if query else f"{base}?"
    return f"{head}{urlencode(fields)}"


def user_code_from(choose: Callable[[str], str]) -> str:
    """An 8-letter code from unambiguous letters, shown as ``BCDF-GHJK`` on card and page;
    ``choose`` picks one letter uniformly (``secrets.choice``: no modulo bias)."""
    letters = "".join(choose(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
    return f"{letters[:4]}-{letters[4:]}"


def token_digest(value: str) -> str:
    """What is stored of a code or refresh token, and its journal form's source (a prefix)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def redirect_host(uri: str) -> str:
    """The host (and port) a URI leads to, as a person must compare it: the exact URL's own
    authority, so a name outside ASCII is in the IDNA (punycode) form the browser goes to and a
    look-alike in another script (a Cyrillic a in a well-known name) never reads as the real one.
    A URI that is not exact (kept from before the rule) is shown whole, never a part of it read
    one way here and another by the browser."""
    try:
        return exact_url(uri).authority
    except UrlRefused:
        return uri
