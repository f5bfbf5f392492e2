"""Where a grant's authorization server is: its metadata read, a preset and the policy's overrides
merged into one :class:`Endpoints` (pure).

Discovery (RFC 8414, then OpenID Connect Discovery) is trusted only for the issuer that was asked
for: a metadata document naming another issuer is refused (RFC 8414 section 3.3), so a
compromised or mistaken document cannot send the refresh token elsewhere. Every endpoint, from
whichever source, must be https; the policy's override wins over the metadata, which wins over
the preset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

from safeport.action_gateway.oauth.errors import OAuthBadResponse
from safeport.action_gateway.oauth.presets import Preset
from safeport.shared.schemas.config_oauth import ClientAuth, OAuthGrantSpec, check_endpoint


@dataclass(frozen=True)
class Metadata:
    """The fields of an authorization server's metadata this client uses."""

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str | None
    device_authorization_endpoint: str | None
    revocation_endpoint: str | None
    iss_supported: bool
    code_challenge_methods: tuple[str, ...] | None


@dataclass(frozen=True)
class Endpoints:
    """Everything the protocol needs to know of one grant's provider, resolved once."""

    issuer: str | None
    authorization: str | None
    token: str
    device: str | None
    revocation: str | None
    # RFC 9207: the provider says it sends `iss` in every authorization response.
    iss_supported: bool
    quirks: frozenset[str]
    client_auth: ClientAuth
    scopes: tuple[str, ...]  # asked for at connect


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where ``issuer``'s metadata may be, in the order asked: RFC 8414's well-known URI (path
    after the well-known segment), then OpenID Connect's (appended to the issuer)."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return (
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    )


def parse_metadata(body: bytes, expected_issuer: str) -> Metadata:
    """The metadata document ``body``; its ``issuer`` must be exactly ``expected_issuer`` and
    every endpoint it gives an https URL."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise OAuthBadResponse("the provider's metadata is not JSON") from None
    if not isinstance(data, dict):
        raise OAuthBadResponse("the provider's metadata is not a JSON object")
    if data.get("issuer") != expected_issuer:
        raise OAuthBadResponse(
            "the provider's metadata names another issuer than the one configured"
        )
    urls: dict[str, str | None] = {}
    for field in (
        "authorization_endpoint",
        "token_endpoint",
        "device_authorization_endpoint",
        "revocation_endpoint",
    ):
        value = data.get(field)
        if value is not None:
            if not isinstance(value, str):
                raise OAuthBadResponse(f"the provider's metadata has a malformed {field}")
            try:
                check_endpoint(value, field)
            except ValueError:
                raise OAuthBadResponse(
                    f"the provider's metadata gives a {field} that is not an https URL"
                ) from None
        urls[field] = value
    methods = data.get("code_challenge_methods_supported")
    if methods is not None and not (
        isinstance(methods, list) and all(isinstance(m, str) for m in methods)
    ):
        raise OAuthBadResponse("the provider's metadata has malformed code_challenge_methods")
    return Metadata(
        issuer=expected_issuer,
        authorization_endpoint=urls["authorization_endpoint"],
        token_endpoint=urls["token_endpoint"],
        device_authorization_endpoint=urls["device_authorization_endpoint"],
        revocation_endpoint=urls["revocation_endpoint"],
        iss_supported=data.get("authorization_response_iss_parameter_supported") is True,
        code_challenge_methods=None if methods is None else tuple(methods),
    )


def resolve(spec: OAuthGrantSpec, preset: Preset | None, metadata: Metadata | None) -> Endpoints:
    """One grant's endpoints: the policy's override, else the metadata's, else the preset's.

    Raises :class:`OAuthBadResponse` when no token endpoint is known, or when the provider's
    metadata says it does not do PKCE S256 (this client never sends a code without it)."""
    methods = metadata.code_challenge_methods if metadata is not None else None
    if methods is not None and "S256" not in methods:
        raise OAuthBadResponse("the provider does not support PKCE with S256")

    def pick(field: str) -> str | None:
        value: str | None = getattr(spec, field)
        if value is None and metadata is not None:
            value = getattr(metadata, field)
        if value is None and preset is not None:
            value = getattr(preset, field)
        return value

    token = pick("token_endpoint")
    if token is None:
        raise OAuthBadResponse("no token endpoint is known for this grant")
    issuer = spec.issuer if spec.issuer is not None else (preset.issuer if preset else None)
    default_scopes = preset.default_scopes if preset is not None else ()
    return Endpoints(
        issuer=issuer,
        authorization=pick("authorization_endpoint"),
        token=token,
        device=pick("device_authorization_endpoint"),
        revocation=pick("revocation_endpoint"),
        iss_supported=metadata.iss_supported if metadata is not None else False,
        quirks=preset.quirks if preset is not None else frozenset(),
        client_auth=spec.client_auth or (preset.client_auth if preset else "none"),
        scopes=tuple(spec.scopes) if spec.scopes is not None else default_scopes,
    )
