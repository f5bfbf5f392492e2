"""The token endpoint's and the device endpoint's answers, read strictly (pure).

An answer is JSON (RFC 6749 section 5.1), or a form-encoded body from a provider that sends one
(GitHub, unless asked for JSON); an ``error`` field makes it an error whatever the status (GitHub
and Slack answer errors with 200). Tokens leave the body only as :class:`SecretBytes`; every
refusal names the field and the rule, never a value or the body, and the provider's
``error_description`` only through :func:`provider_words`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

from safeport.action_gateway.oauth.errors import (
    OAuthBadResponse,
    OAuthRefused,
    plain_text,
    provider_words,
)
from safeport.action_gateway.oauth.presets import (
    OK_FIELD,
    SCOPE_SEPARATOR_COMMA,
    TOKEN_TYPE_BOT_OR_USER,
)
from safeport.vault.secrets import SecretBytes

# A token is printable ASCII without blanks (RFC 6750's b64token and what providers issue), and
# bounded; a longer or stranger one is not what the service will accept.
MAX_TOKEN_CHARS = 8192
MAX_LIFETIME_S = 10 * 365 * 24 * 3600
_BEARER = frozenset({"bearer"})
_SLACK_BEARERS = frozenset({"bearer", "bot", "user"})
# RFC 6749 section 3.3's scope-token characters (the schema's SCOPE_TOKEN, as a set).
_SCOPE_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F)) - {'"', "\\"}


@dataclass(frozen=True, repr=False)
class TokenGrant:
    access_token: SecretBytes
    refresh_token: SecretBytes | None
    expires_in: int | None  # seconds; None: the provider did not say (the token may not expire)
    scopes: tuple[str, ...] | None  # granted; None: not said, i.e. as asked (RFC 6749 5.1)
    token_type: str

    def wipe(self) -> None:
        self.access_token.wipe()
        if self.refresh_token is not None:
            self.refresh_token.wipe()

    def __repr__(self) -> str:
        refresh = "<redacted>" if self.refresh_token is not None else None
        return (
            f"TokenGrant(access_token=<redacted>, refresh_token={refresh}, "
            f"expires_in={self.expires_in!r}, scopes={self.scopes!r}, "
            f"token_type={self.token_type!r})"
        )


@dataclass(frozen=True, repr=False)
class DeviceAuthorization:
    device_code: SecretBytes
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    interval: int  # seconds between polls (RFC 8628: 5 when the provider does not say)
    expires_in: int

    def __repr__(self) -> str:
        return (
            f"DeviceAuthorization(device_code=<redacted>, user_code={self.user_code!r}, "
            f"verification_uri={self.verification_uri!r}, interval={self.interval!r}, "
            f"expires_in={self.expires_in!r})"
        )


@dataclass(frozen=True)
class DevicePending:
    """The human has not answered yet; ``slow_down``: poll 5 s less often from now on."""

    slow_down: bool


@dataclass(frozen=True)
class ProviderError:
    error: str  # the RFC 6749 code, reduced to its own characters
    description: str | None  # as it may be shown (see errors.provider_words)


def parse_token_response(
    status: int, content_type: str | None, body: bytes, *, quirks: frozenset[str] = frozenset()
) -> TokenGrant:
    """A successful token answer as a :class:`TokenGrant`; an error answer raises
    :class:`OAuthRefused` (``.error`` is the provider's code), anything else
    :class:`OAuthBadResponse`."""
    fields = _fields(content_type, body)
    _raise_if_error(status, fields, quirks)
    if status != 200:
        raise OAuthBadResponse(f"the token endpoint answered HTTP {status} without an error")
    token_type = fields.get("token_type")
    bearer_names = _SLACK_BEARERS if TOKEN_TYPE_BOT_OR_USER in quirks else _BEARER
    if not isinstance(token_type, str) or token_type.lower() not in bearer_names:
        # A DPoP- or MAC-bound token sent as a bearer would be refused by the service (or,
        # worse, accepted by one that does not check the binding).
        raise OAuthBadResponse("the token endpoint issued a token that is not a bearer token")
    access = _token(fields, "access_token", required=True)
    assert access is not None
    refresh = _token(fields, "refresh_token", required=False)
    return TokenGrant(
        access_token=access,
        refresh_token=refresh,
        expires_in=_seconds(fields, "expires_in", required=False),
        scopes=_scopes(fields, quirks),
        token_type="Bearer",  # noqa: S106 - the scheme's name, checked above
    )


def parse_device_response(
    status: int, content_type: str | None, body: bytes
) -> DeviceAuthorization:
    """RFC 8628 section 3.2: the device code (a secret), the user code and where to enter it."""
    fields = _fields(content_type, body)
    _raise_if_error(status, fields, frozenset())
    if status != 200:
        raise OAuthBadResponse(f"the device endpoint answered HTTP {status} without an error")
    device_code = _token(fields, "device_code", required=True)
    assert device_code is not None
    user_code = _shown_text(fields, "user_code", required=True)
    uri = _shown_text(fields, "verification_uri", required=True, alias="verification_url")
    complete = _shown_text(fields, "verification_uri_complete", required=False)
    for value in (uri, complete):
        if value is not None and not value.startswith("https://"):
            device_code.wipe()
            raise OAuthBadResponse("the device endpoint gave a verification URI that is not https")
    interval = _seconds(fields, "interval", required=False)
    expires_in = _seconds(fields, "expires_in", required=True)
    assert user_code is not None and uri is not None and expires_in is not None
    return DeviceAuthorization(
        device_code=device_code,
        user_code=user_code,
        verification_uri=uri,
        verification_uri_complete=complete,
        interval=max(1, interval if interval is not None else 5),
        expires_in=expires_in,
    )


def parse_device_poll(
    status: int, content_type: str | None, body: bytes, *, quirks: frozenset[str] = frozenset()
) -> TokenGrant | DevicePending:
    """One poll of the token endpoint in the device flow (RFC 8628 section 3.5): the grant, or
    pending; ``access_denied``, ``expired_token`` and the rest raise :class:`OAuthRefused`."""
    error = parse_error(status, content_type, body)
    if error is not None and error.error in ("authorization_pending", "slow_down"):
        return DevicePending(slow_down=error.error == "slow_down")
    return parse_token_response(status, content_type, body, quirks=quirks)


def parse_error(status: int, content_type: str | None, body: bytes) -> ProviderError | None:
    """The provider's error in an answer (RFC 6749 section 5.2), or None when it has none.

    A body that cannot be read gives None: the caller's own parse says why."""
    del status  # an error is an error at 200 too (GitHub, Slack)
    try:
        fields = _fields(content_type, body)
    except OAuthBadResponse:
        return None
    return _error_of(fields, frozenset({OK_FIELD}))


def granted_scopes(grant: TokenGrant, asked: Sequence[str]) -> tuple[str, ...]:
    """The scopes the grant holds: those the provider said, or those asked when it said none."""
    return grant.scopes if grant.scopes is not None else tuple(asked)


def scopes_not_granted(asked: Sequence[str], granted: Sequence[str]) -> tuple[str, ...]:
    """The scopes asked for that the provider did not grant (RFC 6749 section 3.3 lets it
    narrow them), in the order asked: shown to the human at connect."""
    held = set(granted)
    return tuple(scope for scope in asked if scope not in held)


def _fields(content_type: str | None, body: bytes) -> dict[str, object]:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthBadResponse("the provider's answer is not UTF-8 text") from None
    if media == "application/x-www-form-urlencoded":
        pairs = parse_qsl(text, keep_blank_values=True)
        fields: dict[str, object] = {}
        for name, value in pairs:
            if name in fields:
                raise OAuthBadResponse("the provider's answer gives a field twice")
            fields[name] = value
        return fields
    if media != "application/json" and not media.endswith("+json"):
        raise OAuthBadResponse("the provider's answer is neither JSON nor a form")
    try:
        data = json.loads(text, object_pairs_hook=_no_repeats)
    except ValueError:
        raise OAuthBadResponse("the provider's answer is not valid JSON") from None
    if not isinstance(data, dict):
        raise OAuthBadResponse("the provider's answer is not a JSON object")
    return data


def _no_repeats(pairs: list[tuple[str, object]]) -> dict[str, object]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError("a field twice")
    return dict(pairs)


def _error_of(fields: dict[str, object], quirks: frozenset[str]) -> ProviderError | None:
    error = fields.get("error")
    if error is None and OK_FIELD in quirks and fields.get("ok") is False:
        error = "unnamed"
    if error is None:
        return None
    text = error if isinstance(error, str) else "unnamed"
    name = "".join(c for c in text[:64] if c.isascii() and (c.isalnum() or c in "_.-:"))
    words = provider_words(fields.get("error_description"))
    return ProviderError(error=name or "unnamed", description=words)


def _raise_if_error(status: int, fields: dict[str, object], quirks: frozenset[str]) -> None:
    found = _error_of(fields, quirks)
    if found is None:
        return
    said = f"the provider refused ({found.error}, HTTP {status})"
    words = f"{said}: {found.description}" if found.description else said
    raise OAuthRefused(words, error=found.error)


def _token(fields: dict[str, object], name: str, *, required: bool) -> SecretBytes | None:
    value = fields.get(name)
    if value is None or (value == "" and not required):
        if required:
            raise OAuthBadResponse(f"the provider's answer has no {name}")
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TOKEN_CHARS:
        raise OAuthBadResponse(f"the provider's answer has a malformed {name}")
    if not all("\x21" <= char <= "\x7e" for char in value):
        raise OAuthBadResponse(f"the provider's answer has a malformed {name}")
    return SecretBytes(value.encode("ascii"))


def _seconds(fields: dict[str, object], name: str, *, required: bool) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        if required:
            raise OAuthBadResponse(f"the provider's answer has no {name}")
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 10:
        value = int(value)  # a form-encoded answer's numbers are text
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_LIFETIME_S:
        raise OAuthBadResponse(f"the provider's answer has a malformed {name}")
    return value


def _scopes(fields: dict[str, object], quirks: frozenset[str]) -> tuple[str, ...] | None:
    value = fields.get("scope")
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 8192:
        raise OAuthBadResponse("the provider's answer has a malformed scope")
    separators = value.replace(",", " ") if SCOPE_SEPARATOR_COMMA in quirks else value
    scopes = tuple(dict.fromkeys(separators.split()))
    if any(set(scope) - _SCOPE_CHARS for scope in scopes):
        raise OAuthBadResponse("the provider's answer has a malformed scope")
    return scopes


def _shown_text(
    fields: dict[str, object], name: str, *, required: bool, alias: str | None = None
) -> str | None:
    value = fields.get(name)
    if value is None and alias is not None:
        value = fields.get(alias)  # Google's device endpoint says verification_url
    if value is None:
        if required:
            raise OAuthBadResponse(f"the provider's answer has no {name}")
        return None
    if not isinstance(value, str) or not value or len(value) > 2000:
        raise OAuthBadResponse(f"the provider's answer has a malformed {name}")
    if plain_text(value, 2000) != value or " " in value:
        raise OAuthBadResponse(f"the provider's answer has a malformed {name}")
    return value
