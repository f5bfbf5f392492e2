"""The catalogue of OAuth providers: endpoints, default scopes and quirks, as data (pure).

A preset is for a provider without discovery metadata, or with behaviour the protocol does not
say; a provider that publishes RFC 8414 / OpenID Connect metadata is reached with ``issuer``
alone. Every fact here is from the provider's own public documentation (``docs_url``); a test
checks each entry's shape (https endpoints, known quirks, valid default scopes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from safeport.shared.schemas.config_oauth import ClientAuth

# The token endpoint answers application/x-www-form-urlencoded unless asked for JSON with
# `Accept: application/json` (GitHub); the client asks, and still reads a form answer.
FORM_ENCODED_TOKEN_RESPONSE = "form_encoded_token_response"
# Scopes are joined with "," in the authorization request and may come back comma separated.
SCOPE_SEPARATOR_COMMA = "scope_separator_comma"
# A refresh token is issued only if `offline_access` is among the scopes asked for.
OFFLINE_ACCESS_SCOPE = "offline_access_scope"
# A refresh token is issued only with `access_type=offline` (and, again, `prompt=consent`).
ACCESS_TYPE_OFFLINE = "access_type_offline"
# Access tokens may not expire and no refresh token may come (an OAuth app without expiry).
NO_REFRESH_TOKEN = "no_refresh_token"
# The authorization request names the API: `audience=api.atlassian.com`, `prompt=consent`.
AUDIENCE = "audience"
# Errors come as HTTP 200 with `"ok": false` and `"error"` (Slack's Web API convention).
OK_FIELD = "ok_field"
# The token type is said as "bot" or "user" (Slack); both are sent as bearer tokens.
TOKEN_TYPE_BOT_OR_USER = "token_type_bot_or_user"

QUIRKS = frozenset(
    {
        FORM_ENCODED_TOKEN_RESPONSE,
        SCOPE_SEPARATOR_COMMA,
        OFFLINE_ACCESS_SCOPE,
        ACCESS_TYPE_OFFLINE,
        NO_REFRESH_TOKEN,
        AUDIENCE,
        OK_FIELD,
        TOKEN_TYPE_BOT_OR_USER,
    }
)
ATLASSIAN_AUDIENCE = "api.atlassian.com"


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    issuer: str | None  # set when the provider publishes discovery metadata for it
    authorization_endpoint: str
    token_endpoint: str
    device_authorization_endpoint: str | None
    revocation_endpoint: str | None  # RFC 7009 only; a provider-specific API is not one
    default_scopes: tuple[str, ...]
    client_auth: ClientAuth
    quirks: frozenset[str]
    docs_url: str


_PRESETS = (
    Preset(
        name="github",
        title="GitHub (OAuth app or GitHub App)",
        issuer=None,
        authorization_endpoint="https://github.com/login/oauth/authorize",
        token_endpoint="https://github.com/login/oauth/access_token",
        device_authorization_endpoint="https://github.com/login/device/code",
        revocation_endpoint=None,
        default_scopes=("repo", "read:user"),
        client_auth="client_secret_post",
        quirks=frozenset({FORM_ENCODED_TOKEN_RESPONSE, SCOPE_SEPARATOR_COMMA, NO_REFRESH_TOKEN}),
        docs_url="https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps",
    ),
    Preset(
        name="google",
        title="Google",
        issuer="https://accounts.google.com",
        authorization_endpoint="https://accounts.google.com/o/oauth2/v2/auth",
        token_endpoint="https://oauth2.googleapis.com/token",
        device_authorization_endpoint="https://oauth2.googleapis.com/device/code",
        revocation_endpoint="https://oauth2.googleapis.com/revoke",
        default_scopes=("openid", "email"),
        client_auth="client_secret_post",
        quirks=frozenset({ACCESS_TYPE_OFFLINE}),
        docs_url="https://developers.google.com/identity/protocols/oauth2/native-app",
    ),
    Preset(
        name="microsoft",
        title="Microsoft Entra ID (any organisation or personal account)",
        # The "common" endpoints answer for many tenants, each with its own issuer: no single
        # issuer to check, so none is claimed.
        issuer=None,
        authorization_endpoint="https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
        token_endpoint="https://login.microsoftonline.com/common/oauth2/v2.0/token",
        device_authorization_endpoint=(
            "https://login.microsoftonline.com/common/oauth2/v2.0/devicecode"
        ),
        revocation_endpoint=None,
        default_scopes=("offline_access", "User.Read"),
        client_auth="none",
        quirks=frozenset({OFFLINE_ACCESS_SCOPE}),
        docs_url="https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow",
    ),
    Preset(
        name="slack",
        title="Slack",
        issuer=None,
        authorization_endpoint="https://slack.com/oauth/v2/authorize",
        token_endpoint="https://slack.com/api/oauth.v2.access",
        device_authorization_endpoint=None,
        revocation_endpoint=None,
        default_scopes=("channels:read", "chat:write"),
        # Slack asks for HTTP Basic over form fields where possible (oauth.v2.access).
        client_auth="client_secret_basic",
        quirks=frozenset({SCOPE_SEPARATOR_COMMA, OK_FIELD, TOKEN_TYPE_BOT_OR_USER}),
        docs_url="https://docs.slack.dev/reference/methods/oauth.v2.access",
    ),
    Preset(
        name="atlassian",
        title="Atlassian (Jira, Confluence) OAuth 2.0 (3LO)",
        issuer=None,
        authorization_endpoint="https://auth.atlassian.com/authorize",
        token_endpoint="https://auth.atlassian.com/oauth/token",
        device_authorization_endpoint=None,
        revocation_endpoint=None,
        default_scopes=("read:jira-work", "offline_access"),
        client_auth="client_secret_post",
        quirks=frozenset({AUDIENCE, OFFLINE_ACCESS_SCOPE}),
        docs_url="https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/",
    ),
    Preset(
        name="linear",
        title="Linear",
        issuer=None,
        authorization_endpoint="https://linear.app/oauth/authorize",
        token_endpoint="https://api.linear.app/oauth/token",
        device_authorization_endpoint=None,
        revocation_endpoint="https://api.linear.app/oauth/revoke",
        default_scopes=("read",),
        client_auth="client_secret_post",
        quirks=frozenset({SCOPE_SEPARATOR_COMMA}),
        docs_url="https://linear.app/developers/oauth-2-0-authentication",
    ),
    Preset(
        name="gitlab",
        title="GitLab.com",
        issuer="https://gitlab.com",
        authorization_endpoint="https://gitlab.com/oauth/authorize",
        token_endpoint="https://gitlab.com/oauth/token",
        device_authorization_endpoint="https://gitlab.com/oauth/authorize_device",
        revocation_endpoint="https://gitlab.com/oauth/revoke",
        default_scopes=("read_api",),
        client_auth="none",
        quirks=frozenset(),
        docs_url="https://docs.gitlab.com/api/oauth2/",
    ),
)
PRESETS: Mapping[str, Preset] = MappingProxyType({preset.name: preset for preset in _PRESETS})
