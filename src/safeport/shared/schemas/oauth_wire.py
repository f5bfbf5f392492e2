"""Messages on agent.sock that carry OAuth for remote clients (the desktop tunnel).

The gateway is the authorization server: it approves each client through a card, issues the
tokens and journals every grant. The context server, which stays credential-free, is only the
resource server and a relay: it passes the client's HTTP requests to the authorization endpoints
through unchanged (as ``params`` / ``form`` string maps) and sends back what the gateway answers.
Every check an authorization server makes -- redirect URI, PKCE, client authentication, code
reuse, refresh-token rotation -- is the gateway's, so no decision rests on the relay.

Access tokens are compact JWS (EdDSA over Ed25519) that the context server verifies with the
keys ``oauth_keys`` returns; their claims are :class:`AccessClaims`. Whether a token is still
good (its client not revoked) is asked with ``oauth_check`` on every remote request.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from safeport.shared.exact_urls import UrlRefused, exact_url
from safeport.shared.schemas.envelope import Envelope

# A relayed query string or form body: bounded so a relay cannot carry a flood into the gateway.
_Key = Annotated[str, Field(min_length=1, max_length=64)]
_Value = Annotated[str, Field(max_length=4096)]
FormFields = Annotated[dict[_Key, _Value], Field(max_length=32)]


def _exact_origin(value: str) -> str:
    """The issuer the gateway signs into tokens and builds every endpoint on: an origin written
    exactly as a browser writes it (``scheme://host[:port]``), whatever the relay sends."""
    try:
        url = exact_url(value + "/")
    except UrlRefused as exc:
        raise ValueError(exc.reason) from exc
    if url.path != "/" or url.query:
        raise ValueError("the public URL is an origin only")
    return value


PublicUrl = Annotated[
    str,
    Field(min_length=8, max_length=512, pattern=r"^https?://"),
    AfterValidator(_exact_origin),
]
RootName = Annotated[str, Field(min_length=1, max_length=64)]
RootDir = Annotated[str, Field(min_length=1, max_length=256)]
Profile = Literal["reader", "agent"]


class OAuthKeys(Envelope):
    """The public keys access tokens are signed with (the context server caches them)."""

    type: Literal["oauth_keys"]


class OAuthMetadata(Envelope):
    """RFC 8414 metadata for the issuer the client reaches at ``public_url``."""

    type: Literal["oauth_metadata"]
    public_url: PublicUrl


class OAuthRegister(Envelope):
    """Dynamic client registration (RFC 7591): the client's JSON body, relayed."""

    type: Literal["oauth_register"]
    public_url: PublicUrl
    client_metadata: Annotated[dict[str, Any], Field(max_length=64)]


class OAuthAuthorize(Envelope):
    """The authorization request's query parameters, relayed, and what this server offers."""

    type: Literal["oauth_authorize"]
    public_url: PublicUrl
    params: FormFields
    # The roots this context server serves over HTTP and the profile remote clients get; the
    # card shows them and the token is bound to what the human approves. A root is named by
    # its identity, ``name~<12 hex of SHA-256 of its resolved directory>``, so an approval and
    # its tokens never pass to another directory that happens to get the same name.
    roots: Annotated[list[RootName], Field(min_length=1, max_length=64)]
    # Each root's directory, in the order of ``roots``, for the card to show (not bound).
    root_dirs: Annotated[list[RootDir], Field(max_length=64)] = Field(default_factory=list)
    profile: Profile = "reader"


class OAuthAuthorizeWait(Envelope):
    """The browser page waits for the human's answer to one authorization request."""

    type: Literal["oauth_authorize_wait"]
    request_id: Annotated[str, Field(min_length=16, max_length=128)]
    wait_s: Annotated[float, Field(ge=0, le=30)] = 25.0


class OAuthToken(Envelope):
    """The token endpoint's form body, relayed (code or refresh-token grant)."""

    type: Literal["oauth_token"]
    public_url: PublicUrl
    form: FormFields
    # The Authorization header's value if the client sent one (client_secret_basic).
    authorization: Annotated[str, Field(max_length=4096)] | None = None


class OAuthRevoke(Envelope):
    """RFC 7009 revocation: the form body, relayed."""

    type: Literal["oauth_revoke"]
    public_url: PublicUrl
    form: FormFields
    authorization: Annotated[str, Field(max_length=4096)] | None = None


class OAuthCheck(Envelope):
    """Is this (already signature-checked) access token still good: client not revoked?"""

    type: Literal["oauth_check"]
    client_id: Annotated[str, Field(min_length=1, max_length=512)]
    token_id: Annotated[str, Field(min_length=8, max_length=128)]


OAUTH_REQUESTS = (
    OAuthKeys,
    OAuthMetadata,
    OAuthRegister,
    OAuthAuthorize,
    OAuthAuthorizeWait,
    OAuthToken,
    OAuthRevoke,
    OAuthCheck,
)


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PublicKey(_Result):
    kid: StrictStr
    alg: Literal["EdDSA"] = "EdDSA"
    crv: Literal["Ed25519"] = "Ed25519"
    x: StrictStr = Field(description="the raw public key, base64url without padding")


class OAuthKeysResult(_Result):
    keys: list[PublicKey]


class OAuthMetadataResult(_Result):
    metadata: dict[str, Any]


class OAuthHttpAnswer(_Result):
    """What the relay sends back as its HTTP response, unchanged."""

    status: StrictInt
    body: dict[str, Any]
    headers: dict[str, StrictStr] = Field(default_factory=dict)


class OAuthAuthorizeResult(_Result):
    """``wait``: show the waiting page (the code the card shows too); ``redirect``: send the
    browser to ``location`` (an error the client's redirect URI may receive); ``error``: show
    an error page and redirect nowhere (an unknown client or a redirect URI that does not match
    must never be redirected to)."""

    kind: Literal["wait", "redirect", "error"]
    request_id: StrictStr | None = None
    user_code: StrictStr | None = None
    client_name: StrictStr | None = None
    redirect_host: StrictStr | None = None
    location: StrictStr | None = None
    status: StrictInt = 200
    error: StrictStr | None = None
    error_description: StrictStr | None = None


class OAuthAuthorizeWaitResult(_Result):
    state: Literal["pending", "approved", "denied", "expired"]
    # On approved (the code) or denied (access_denied): where the browser goes next.
    location: StrictStr | None = None


class OAuthCheckResult(_Result):
    active: StrictBool
    reason: StrictStr | None = None


class AccessClaims(_Result):
    """The claims of an access token (besides the JWS header's ``kid``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    iss: StrictStr  # the issuer: the public URL the client reached
    aud: StrictStr  # the resource: the public URL's MCP endpoint
    sub: StrictStr  # the client id
    exp: StrictInt
    iat: StrictInt
    jti: StrictStr
    sp_roots: list[StrictStr]
    sp_profile: Profile
    sp_client: StrictStr  # the client's name as the human approved it
