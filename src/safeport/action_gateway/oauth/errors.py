"""What goes wrong talking to an authorization server, each with the code an action fails with.

A message names the grant's provider and the step, never a token, a code, a verifier or a body
the provider sent: a body may echo what was posted to it. The one text of the provider's that
may be shown is its ``error_description`` (RFC 6749 section 5.2), and only through
:func:`provider_words`: control characters dropped, cut to 200 characters, and withheld whole
if the project's secret detector finds anything in it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from safeport.errors import Error, ErrorCode
from safeport.shared.secret_scan import find_secrets

OAuthCode = Literal[
    "oauth_unreachable", "oauth_bad_response", "oauth_refused", "oauth_grant_dead", "oauth_pending"
]
_MESSAGE_CHARS = 400
_DESCRIPTION_CHARS = 200
_SCANNED_CHARS = 4096


class OAuthError(Error):
    """Base of the OAuth client's errors; ``code`` is what the action or the CLI reports (the
    ``wire_code`` follows the project's rule: ``denied`` for a no, ``invalid`` otherwise)."""

    code: ClassVar[OAuthCode] = "oauth_bad_response"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(plain_text(message, _MESSAGE_CHARS), hint=hint)


class OAuthUnreachable(OAuthError):
    """The provider could not be reached, or did not answer in time, or its TLS failed."""

    code: ClassVar[OAuthCode] = "oauth_unreachable"


class OAuthBadResponse(OAuthError):
    """The provider answered something this client cannot use (too big, malformed, a redirect,
    another issuer)."""

    code: ClassVar[OAuthCode] = "oauth_bad_response"


class OAuthRefused(OAuthError):
    """The provider or the human said no, or a callback failed its checks (state, iss)."""

    code: ClassVar[OAuthCode] = "oauth_refused"
    exit_code = 1
    wire_code: ClassVar[ErrorCode] = "denied"

    def __init__(self, message: str, *, error: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        # The RFC 6749 error code (``access_denied``, ``invalid_grant``…), or None.
        self.error = error


class OAuthGrantDead(OAuthRefused):
    """The refresh token was refused (``invalid_grant``): only a new connect brings it back."""

    code: ClassVar[OAuthCode] = "oauth_grant_dead"


class OAuthPending(OAuthError):
    """The device flow's human has not answered yet (``authorization_pending``)."""

    code: ClassVar[OAuthCode] = "oauth_pending"


def plain_text(text: str, limit: int) -> str:
    """``text`` without control characters, cut to ``limit`` characters."""
    kept = "".join(char if char.isprintable() else " " for char in text)
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def provider_words(description: object) -> str | None:
    """The provider's ``error_description`` as it may be shown, or None (absent, not text, or
    holding something the secret detector calls a secret)."""
    if not isinstance(description, str) or not description.strip():
        return None
    # Scanned whole before it is cut, so a secret is not shown half because the cut hid it.
    whole = plain_text(description.strip(), _SCANNED_CHARS)
    findings = find_secrets(whole)
    return None if findings else plain_text(whole, _DESCRIPTION_CHARS)
