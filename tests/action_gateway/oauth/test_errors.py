"""OAuth errors: one code each, bounded plain messages, the provider's words only when clean."""

from __future__ import annotations

from safeport.action_gateway.oauth.errors import (
    OAuthBadResponse,
    OAuthGrantDead,
    OAuthPending,
    OAuthRefused,
    OAuthUnreachable,
    plain_text,
    provider_words,
)
from safeport.errors import Error


def test_each_error_has_its_code_and_wire_code() -> None:
    found = {
        cls.code: (cls.exit_code, cls.wire_code)
        for cls in (OAuthUnreachable, OAuthBadResponse, OAuthRefused, OAuthGrantDead, OAuthPending)
    }
    assert found == {
        "oauth_unreachable": (2, "invalid"),
        "oauth_bad_response": (2, "invalid"),
        "oauth_refused": (1, "denied"),
        "oauth_grant_dead": (1, "denied"),
        "oauth_pending": (2, "invalid"),
    }
    assert issubclass(OAuthGrantDead, OAuthRefused) and issubclass(OAuthRefused, Error)


def test_a_message_is_plain_and_bounded() -> None:
    error = OAuthBadResponse("bad\x1b[31m answer\r\n" + "z" * 1000)
    assert "\x1b" not in str(error) and "\r" not in str(error) and "\n" not in str(error)
    assert len(error.message) <= 400
    dead = OAuthGrantDead("refused", error="invalid_grant", hint="run `sp oauth connect tracker`")
    assert dead.diagnostic() == "refused; run `sp oauth connect tracker`"
    assert dead.error == "invalid_grant"


def test_plain_text_keeps_printable_text_only() -> None:
    assert plain_text("a\tb\u202ec\x00d", 100) == "a b c d"
    assert plain_text("x" * 10, 5) == "xxxx…"


def test_the_providers_words_are_withheld_when_they_hold_a_secret() -> None:
    assert provider_words("The refresh token was revoked") == "The refresh token was revoked"
    assert provider_words(None) is None and provider_words(42) is None
    assert provider_words("   ") is None
    token = "glpat-" + "Xy7Zw3Qa9Rt5Ub1Lm8Nk"
    assert provider_words(f"token {token} is revoked") is None
    assert provider_words("password=Zq9!xw4Lk2Pm7Hd") is None
    long_words = provider_words("w" * 500)
    assert long_words is not None and len(long_words) == 200
