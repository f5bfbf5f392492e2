"""The token and device endpoints' answers, read strictly: tokens only as secrets, errors by
their RFC 6749 code, never a value or the body in a message."""

from __future__ import annotations

import json

import pytest

from safeport.action_gateway.oauth.errors import OAuthBadResponse, OAuthError, OAuthRefused
from safeport.action_gateway.oauth.presets import (
    OK_FIELD,
    SCOPE_SEPARATOR_COMMA,
    TOKEN_TYPE_BOT_OR_USER,
)
from safeport.action_gateway.oauth.responses import (
    DevicePending,
    ProviderError,
    TokenGrant,
    granted_scopes,
    parse_device_poll,
    parse_device_response,
    parse_error,
    parse_token_response,
    scopes_not_granted,
)
from safeport.vault.secrets import SecretBytes

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
ACCESS = "at-9Kq2Wv7Lp4Xz1Rm8Tn5Ys3Bc6Hd0Jf"
REFRESH = "rt-4Fg7Hj2Kl9Qw3Er6Ty1Ui8Op5As0Dz"
DEVICE = "dc-7Yh3Nb6Vc9Xz2Lk5Jh8Gf1Ds4Aq0Wp"


def _json(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def _good(**changes: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "access_token": ACCESS,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": REFRESH,
        "scope": "read write",
    }
    fields.update(changes)
    return {key: value for key, value in fields.items() if value is not None}


def _message_holds_no_token(exc: BaseException) -> None:
    assert isinstance(exc, OAuthError)
    for text in (str(exc), repr(exc), exc.diagnostic(), repr(exc.args)):
        for secret in (ACCESS, REFRESH, DEVICE):
            assert secret not in text
    assert exc.__cause__ is None


def test_a_json_answer_gives_its_tokens_as_secrets() -> None:
    grant = parse_token_response(200, "application/json; charset=utf-8", _json(**_good()))
    assert grant.access_token.reveal() == ACCESS.encode()
    assert grant.refresh_token is not None and grant.refresh_token.reveal() == REFRESH.encode()
    assert (grant.expires_in, grant.scopes, grant.token_type) == (3600, ("read", "write"), "Bearer")
    assert ACCESS not in repr(grant) and REFRESH not in repr(grant) and ACCESS not in str(grant)
    assert "3600" in repr(grant)
    grant.wipe()
    assert grant.access_token.reveal() == b""


def test_token_type_is_compared_without_case_and_only_bearer_is_taken() -> None:
    for token_type in ("bearer", "BEARER", "Bearer"):
        assert parse_token_response(200, JSON, _json(**_good(token_type=token_type)))
    odd: tuple[object, ...] = ("DPoP", "mac", "Bearer ", "", None, 1)
    for other in odd:
        with pytest.raises(OAuthBadResponse, match="not a bearer") as caught:
            parse_token_response(200, JSON, _json(**_good(token_type=other)))
        _message_holds_no_token(caught.value)


def test_githubs_form_encoded_answer_with_comma_separated_scopes() -> None:
    body = f"access_token={ACCESS}&scope=repo%2Cread%3Auser&token_type=bearer".encode()
    grant = parse_token_response(200, FORM, body, quirks=frozenset({SCOPE_SEPARATOR_COMMA}))
    assert grant.access_token.reveal() == ACCESS.encode()
    assert grant.refresh_token is None and grant.expires_in is None
    assert grant.scopes == ("repo", "read:user")
    text = f"access_token={ACCESS}&expires_in=28800&refresh_token={REFRESH}&token_type=bearer"
    grant = parse_token_response(200, FORM, text.encode())
    assert grant.expires_in == 28800 and grant.refresh_token is not None


def test_an_error_is_an_error_whatever_the_status() -> None:
    # GitHub answers a bad code with 200 and a form; RFC 6749 says 400 and JSON.
    answers = [
        (200, FORM, b"error=bad_verification_code&error_description=The+code+is+wrong"),
        (400, JSON, _json(error="invalid_grant", error_description="The code is wrong")),
        (401, JSON, _json(error="invalid_client")),
        (200, JSON, _json(error="invalid_grant", access_token=ACCESS, token_type="Bearer")),
    ]
    for status, content_type, body in answers:
        with pytest.raises(OAuthRefused) as caught:
            parse_token_response(status, content_type, body)
        assert caught.value.error in ("bad_verification_code", "invalid_grant", "invalid_client")
        assert f"HTTP {status}" in str(caught.value)
        _message_holds_no_token(caught.value)


def test_slacks_bot_and_user_token_types_are_bearer_tokens_for_slack_only() -> None:
    slack = frozenset({TOKEN_TYPE_BOT_OR_USER})
    for name in ("bot", "user", "Bearer"):
        grant = parse_token_response(200, JSON, _json(**_good(token_type=name)), quirks=slack)
        assert grant.token_type == "Bearer"
        if name != "Bearer":
            with pytest.raises(OAuthBadResponse, match="not a bearer"):
                parse_token_response(200, JSON, _json(**_good(token_type=name)))
    with pytest.raises(OAuthBadResponse, match="not a bearer"):
        parse_token_response(200, JSON, _json(**_good(token_type="app")), quirks=slack)


def test_slacks_ok_false_is_an_error_only_for_slack() -> None:
    body = _json(ok=False, error="invalid_code")
    with pytest.raises(OAuthRefused) as caught:
        parse_token_response(200, JSON, body, quirks=frozenset({OK_FIELD}))
    assert caught.value.error == "invalid_code"
    with pytest.raises(OAuthRefused) as caught:
        parse_token_response(200, JSON, _json(ok=False), quirks=frozenset({OK_FIELD}))
    assert caught.value.error == "unnamed"


def test_a_status_other_than_200_without_an_error_is_a_bad_answer() -> None:
    for status in (201, 204, 400, 500, 503):
        with pytest.raises(OAuthBadResponse, match=f"HTTP {status}") as caught:
            parse_token_response(status, JSON, _json(**_good()))
        _message_holds_no_token(caught.value)


@pytest.mark.parametrize(
    "changes",
    [
        {"access_token": None},
        {"access_token": ""},
        {"access_token": 12345},
        {"access_token": ["x"]},
        {"access_token": "has a blank " + ACCESS},
        {"access_token": ACCESS + "\n"},
        {"access_token": ACCESS + "é"},
        {"access_token": "a" * 8193},
        {"refresh_token": 7},
        {"refresh_token": REFRESH + " x"},
        {"expires_in": -1},
        {"expires_in": 0},
        {"expires_in": 3600.5},
        {"expires_in": "soon"},
        {"expires_in": True},
        {"expires_in": 10**12},
        {"scope": ["read"]},
        {"scope": 'read "write"'},
        {"scope": "read\\write"},
    ],
)
def test_a_missing_or_malformed_field_is_refused_by_name(changes: dict[str, object]) -> None:
    fields = _good(**{k: v for k, v in changes.items() if v is not None})
    for key, value in changes.items():
        if value is None:
            fields.pop(key)
    with pytest.raises(OAuthBadResponse) as caught:
        parse_token_response(200, JSON, json.dumps(fields).encode())
    assert next(iter(changes)) in str(caught.value)
    _message_holds_no_token(caught.value)


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (JSON, b"[1, 2]"),
        (JSON, b'"access_token"'),
        (JSON, b"{not json"),
        (JSON, b"\xff\xfe" + ACCESS.encode()),
        ("text/html", b"<html>" + ACCESS.encode() + b"</html>"),
        (None, _json(**_good())),
        (JSON, b'{"access_token": "a", "access_token": "' + ACCESS.encode() + b'"}'),
        (FORM, f"access_token=a&access_token={ACCESS}&token_type=bearer".encode()),
    ],
)
def test_an_unreadable_or_ambiguous_body_is_refused_without_quoting_it(
    content_type: str | None, body: bytes
) -> None:
    with pytest.raises(OAuthBadResponse) as caught:
        parse_token_response(200, content_type, body)
    _message_holds_no_token(caught.value)


def test_the_providers_words_are_shown_cut_cleaned_and_never_with_a_secret() -> None:
    description = "The grant was revoked\x1b]0;owned\x07 by the admin " + "x" * 400
    with pytest.raises(OAuthRefused) as caught:
        parse_token_response(400, JSON, _json(error="invalid_grant", error_description=description))
    shown = str(caught.value)
    assert "The grant was revoked" in shown and "\x1b" not in shown and "\x07" not in shown
    assert len(shown) < 300
    leaked = "ghp_" + "Z1x2C3v4B5n6M7a8S9d0F1g2H3j4K5l6P7o8"
    for words in (f"token {leaked} was revoked", f"{'y' * 190} {leaked}"):
        with pytest.raises(OAuthRefused) as caught:
            parse_token_response(400, JSON, _json(error="invalid_grant", error_description=words))
        assert "ghp_" not in str(caught.value)
        assert "invalid_grant" in str(caught.value)


def test_granted_scopes_and_what_was_narrowed() -> None:
    asked = ("read", "write", "admin")
    narrowed = parse_token_response(200, JSON, _json(**_good(scope="read")))
    assert granted_scopes(narrowed, asked) == ("read",)
    assert scopes_not_granted(asked, granted_scopes(narrowed, asked)) == ("write", "admin")
    unsaid = parse_token_response(200, JSON, _json(**_good(scope=None)))
    assert unsaid.scopes is None
    assert granted_scopes(unsaid, asked) == asked
    assert scopes_not_granted(asked, granted_scopes(unsaid, asked)) == ()
    wider = parse_token_response(200, JSON, _json(**_good(scope="read write admin extra read")))
    assert wider.scopes == ("read", "write", "admin", "extra")


# --- the device flow (RFC 8628) ---


def _device(**changes: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "device_code": DEVICE,
        "user_code": "WDJB-MJHT",
        "verification_uri": "https://idp.example.com/device",
        "verification_uri_complete": "https://idp.example.com/device?user_code=WDJB-MJHT",
        "expires_in": 900,
        "interval": 5,
    }
    fields.update(changes)
    return {key: value for key, value in fields.items() if value is not None}


def test_a_device_answer_gives_the_code_as_a_secret_and_the_rest_to_show() -> None:
    device = parse_device_response(200, JSON, _json(**_device()))
    assert device.device_code.reveal() == DEVICE.encode()
    assert (device.user_code, device.interval, device.expires_in) == ("WDJB-MJHT", 5, 900)
    assert device.verification_uri_complete is not None
    assert DEVICE not in repr(device) and "WDJB-MJHT" in repr(device)


def test_device_answers_of_github_and_google_shapes() -> None:
    body = f"device_code={DEVICE}&expires_in=899&interval=5&user_code=ABCD-1234"
    body += "&verification_uri=https%3A%2F%2Fgithub.com%2Flogin%2Fdevice"
    device = parse_device_response(200, FORM, body.encode())
    assert device.verification_uri == "https://github.com/login/device"
    assert device.verification_uri_complete is None
    google = _device(verification_uri=None, verification_url="https://www.google.com/device")
    device = parse_device_response(200, JSON, _json(**google))
    assert device.verification_uri == "https://www.google.com/device"
    assert parse_device_response(200, JSON, _json(**_device(interval=None))).interval == 5


@pytest.mark.parametrize(
    "changes",
    [
        {"device_code": None},
        {"device_code": ""},
        {"user_code": None},
        {"user_code": "AB\x1b[2JCD"},
        {"user_code": "AB CD"},
        {"verification_uri": None},
        {"verification_uri": "http://idp.example.com/device"},
        {"verification_uri": "javascript:alert(1)"},
        {"verification_uri_complete": "http://idp.example.com/device?c=1"},
        {"expires_in": None},
        {"interval": 0},
        {"interval": "fast"},
    ],
)
def test_a_device_answer_missing_or_malformed_is_refused(changes: dict[str, object]) -> None:
    fields = _device()
    for key, value in changes.items():
        if value is None:
            fields.pop(key)
        else:
            fields[key] = value
    with pytest.raises(OAuthBadResponse) as caught:
        parse_device_response(200, JSON, json.dumps(fields).encode())
    _message_holds_no_token(caught.value)


def test_a_device_endpoint_error_is_refused() -> None:
    with pytest.raises(OAuthRefused) as caught:
        parse_device_response(400, JSON, _json(error="unauthorized_client"))
    assert caught.value.error == "unauthorized_client"
    with pytest.raises(OAuthBadResponse, match="HTTP 500"):
        parse_device_response(500, JSON, _json(**_device()))


def test_polling_pending_slow_down_and_the_grant() -> None:
    pending = parse_device_poll(400, JSON, _json(error="authorization_pending"))
    assert pending == DevicePending(slow_down=False)
    assert parse_device_poll(400, JSON, _json(error="slow_down")) == DevicePending(slow_down=True)
    # GitHub: 200, form encoded.
    github = parse_device_poll(200, FORM, b"error=slow_down&error_description=Too+fast&interval=10")
    assert github == DevicePending(slow_down=True)
    grant = parse_device_poll(200, JSON, _json(**_good()))
    assert isinstance(grant, TokenGrant) and grant.access_token.reveal() == ACCESS.encode()


@pytest.mark.parametrize("error", ["expired_token", "access_denied", "invalid_grant", "whatever"])
def test_polling_ends_on_every_other_error(error: str) -> None:
    with pytest.raises(OAuthRefused) as caught:
        parse_device_poll(400, JSON, _json(error=error))
    assert caught.value.error == error


def test_parse_error_reads_an_error_and_only_an_error() -> None:
    found = parse_error(400, JSON, _json(error="invalid_grant", error_description="Revoked"))
    assert found == ProviderError(error="invalid_grant", description="Revoked")
    assert parse_error(200, JSON, _json(**_good())) is None
    assert parse_error(500, "text/html", b"<html>down</html>") is None
    assert parse_error(400, JSON, _json(error=42)) == ProviderError("unnamed", None)


def test_no_secretbytes_compare_equal_so_no_test_reads_them_by_accident() -> None:
    grant = parse_token_response(200, JSON, _json(**_good()))
    assert grant.access_token != SecretBytes(ACCESS.encode())
