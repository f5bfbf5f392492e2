"""The `[credentials.NAME.oauth]` table of gateway.toml: an OAuth grant the gateway holds.

The gateway is the OAuth client: it connects the grant once (a human in a browser, or the device
flow), keeps the refresh token in the vault and mints access tokens in memory. This table says
where the authorization server is and what is asked of it; nothing in it is a secret (a
confidential client's secret is given at connect and sealed in the vault).

Every URL is https and written exactly as a browser writes it: the issuer and the endpoints
decide to whom the refresh token and the client secret are sent, so a plain-http endpoint (which
anyone on the path could read) is refused here, before anything is connected.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from safeport.shared.exact_urls import UrlRefused, exact_url
from safeport.shared.schemas.config_gateway import PolicyTable

# The catalogue's entries (action_gateway/oauth/presets.py holds their endpoints and quirks; a
# test keeps the two lists equal). Named here so the policy file is checked without the gateway.
PresetName = Literal["github", "google", "microsoft", "slack", "atlassian", "linear", "gitlab"]
PRESET_NAMES: tuple[str, ...] = get_args(PresetName)
ClientAuth = Literal["none", "client_secret_basic", "client_secret_post"]
# RFC 6749 section 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), no blank, quote or backslash.
SCOPE_TOKEN = r"^[\x21\x23-\x5b\x5d-\x7e]{1,200}$"  # noqa: S105 - a pattern
ScopeToken = Annotated[str, Field(pattern=SCOPE_TOKEN)]
# RFC 6749 appendix A.1: client_id = *VSCHAR (printable ASCII); blank excluded here as well.
ClientId = Annotated[str, Field(pattern=r"^[\x21-\x7e]{1,256}$")]
ENDPOINT_FIELDS = (
    "authorization_endpoint",
    "token_endpoint",
    "device_authorization_endpoint",
    "revocation_endpoint",
)


class OAuthGrantSpec(PolicyTable):
    preset: PresetName | None = None
    """A catalogue entry whose endpoints, default scopes and quirks are used (see the table)."""
    issuer: str | None = None
    """The authorization server's issuer URL (https); its metadata is discovered (RFC 8414)."""
    client_id: ClientId
    """The client id the provider gave your registered application (not a secret)."""
    client_auth: ClientAuth | None = None
    """How the client proves itself at the token endpoint (unset: the preset's, else "none")."""
    scopes: list[ScopeToken] | None = None
    """The scopes asked for at connect (unset: the preset's default scopes)."""
    ca_file: str | None = None
    """A root-owned PEM file of a private CA to trust instead of the system roots."""
    authorization_endpoint: str | None = None
    """Overrides the discovered or preset authorization endpoint (https)."""
    token_endpoint: str | None = None
    """Overrides the discovered or preset token endpoint (https)."""
    device_authorization_endpoint: str | None = None
    """Overrides the discovered or preset device authorization endpoint (https, RFC 8628)."""
    revocation_endpoint: str | None = None
    """Overrides the discovered or preset revocation endpoint (https, RFC 7009)."""
    allow_private_addresses: bool = False
    """Allow the provider at private, loopback and CGNAT addresses (a self-hosted one)."""
    timeout_s: Annotated[float, Field(gt=0, le=60)] = 10
    """Seconds any one request to the provider may take in all."""
    max_response_bytes: Annotated[int, Field(ge=1024, le=1024 * 1024)] = 65536
    """The largest answer read from the provider; a longer one is refused."""

    @model_validator(mode="after")
    def _https_and_reachable(self) -> OAuthGrantSpec:
        if self.issuer is not None:
            check_issuer(self.issuer)
        for field in ENDPOINT_FIELDS:
            value = getattr(self, field)
            if value is not None:
                check_endpoint(value, f"`{field}`")
        if self.ca_file is not None and not self.ca_file.startswith("/"):
            raise ValueError("`ca_file` must be an absolute path")
        if self.scopes is not None and len(set(self.scopes)) != len(self.scopes):
            raise ValueError("`scopes` names a scope twice")
        if self.preset is None and self.issuer is None:
            if self.token_endpoint is None:
                raise ValueError("give `preset`, `issuer`, or at least `token_endpoint`")
            if self.authorization_endpoint is None and self.device_authorization_endpoint is None:
                raise ValueError(
                    "without `preset` or `issuer`, give `authorization_endpoint` or "
                    "`device_authorization_endpoint` beside `token_endpoint`"
                )
        return self


def check_endpoint(url: str, what: str) -> None:
    """Raise ``ValueError`` unless ``url`` is an https URL written as a browser writes it."""
    try:
        parsed = exact_url(url)
    except UrlRefused as exc:
        raise ValueError(f"{what}: {exc.reason}") from None
    if parsed.scheme != "https":
        raise ValueError(f"{what} must be an https:// URL (plain http is refused)")


def check_issuer(url: str) -> None:
    """An issuer is an https URL with no query or fragment (RFC 8414 section 2); its path may
    be empty (``https://accounts.google.com`` is Google's, to the character)."""
    has_path = url.count("/") > 2
    check_endpoint(url if has_path else url + "/", "`issuer`")
    if "?" in url:
        raise ValueError("`issuer` may not hold a query")
