"""A provider that echoes what was posted to it in its error answer: the refresh token, the
authorization code, the PKCE verifier, the device code or the client secret never reaches the
error's message (which goes to the agent's refusal, the journal and the human's terminal), in
the error's description or as its code, in any form; the refusal's meaning (a dead grant, a
human's no) is kept. Unit tests of the client over the recording transport of test_client.py."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from safeport.action_gateway.oauth.errors import OAuthError, OAuthGrantDead, OAuthRefused
from safeport.action_gateway.oauth.protocol import DeviceAuthorization
from safeport.action_gateway.oauth.transport import RawResponse
from safeport.vault.secrets import SecretBytes
from tests.action_gateway.oauth.test_client import ISSUER, FakeHttp, _client, _discovering

# Opaque values with nothing the shape-based detector flags: only the client knows them.
REFRESH = "q7Vn2Lk9Xw4Rt8Zp3Hm6"
CLIENT_SECRET = "b5Gd1Ns8Kc3Wj7Qf0Ty4"
DEVICE_CODE = "Mx4Pe8Ru2Ya6Ci0Ol3Sz"
CODE = "Hw3Nv7Bq1Ze5Jk9Tr2Lp"


def _echo(error: str, description: str) -> RawResponse:
    body = {"error": error, "error_description": description}
    return RawResponse(400, "application/json", json.dumps(body).encode())


def _forms(value: str) -> list[str]:
    raw = value.encode()
    return [value, value.upper(), quote(value), raw.hex(), base64.b64encode(raw).decode()]


def _refresh(fake: FakeHttp) -> OAuthError:
    client = _client(fake, client_auth="client_secret_post")
    with pytest.raises(OAuthError) as caught:
        client.refresh(SecretBytes(REFRESH.encode()), SecretBytes(CLIENT_SECRET.encode()))
    return caught.value


def _shown(exc: BaseException) -> str:
    seen = [str(exc), repr(exc), getattr(exc, "hint", None) or "", str(exc.__context__ or "")]
    return " ".join([*seen, str(getattr(exc, "error", ""))])


@pytest.mark.parametrize("secret", [REFRESH, CLIENT_SECRET])
@pytest.mark.parametrize("form", range(5))
def test_a_refresh_error_echoing_what_was_sent_does_not_show_it(secret: str, form: int) -> None:
    fake = _discovering()
    echoed = _forms(secret)[form]
    fake.answers[f"{ISSUER}/token"] = [_echo("invalid_request", f"bad value: {echoed} (sent)")]
    error = _refresh(fake)
    assert isinstance(error, OAuthRefused) and error.error == "invalid_request"
    assert "withheld" in error.message
    assert all(shape not in _shown(error) for shape in _forms(REFRESH) + _forms(CLIENT_SECRET))


def test_an_echoed_invalid_grant_still_kills_the_grant_without_the_token() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_echo("invalid_grant", f"token {REFRESH} was revoked")]
    error = _refresh(fake)
    assert isinstance(error, OAuthGrantDead) and REFRESH not in _shown(error)


def test_an_error_code_that_is_the_token_is_not_shown_either() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_echo(REFRESH, "no")]
    error = _refresh(fake)
    assert REFRESH not in _shown(error) and "unnamed" in error.message


def test_a_code_exchange_error_echoing_the_code_and_verifier_does_not_show_them() -> None:
    fake = _discovering()
    client = _client(fake)
    flow = client.begin_code("http://127.0.0.1:43111/callback")
    verifier = flow.pkce.verifier.reveal().decode()
    for echoed in (CODE, verifier, quote(f"code={CODE}")):
        fake.answers[f"{ISSUER}/token"] = [_echo("invalid_grant", f"unknown: {echoed}")]
        query = {"code": CODE, "state": flow.state, "iss": ISSUER}
        with pytest.raises(OAuthRefused) as caught:
            client.exchange_code(flow, query, None)
        assert CODE not in _shown(caught.value) and verifier not in _shown(caught.value)
        assert caught.value.error == "invalid_grant"


def test_a_device_poll_error_echoing_the_device_code_does_not_show_it() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_echo("expired_token", f"{DEVICE_CODE} expired")]
    device = DeviceAuthorization(
        SecretBytes(DEVICE_CODE.encode()), "WDJB-MJHT", f"{ISSUER}/activate", None, 5, 600
    )
    with pytest.raises(OAuthRefused) as caught:
        _client(fake).device_poll(device, None)
    assert DEVICE_CODE not in _shown(caught.value) and caught.value.error == "expired_token"


def test_a_description_quoting_nothing_sent_is_still_shown() -> None:
    fake = _discovering()
    fake.answers[f"{ISSUER}/token"] = [_echo("invalid_request", "the client is disabled")]
    error = _refresh(fake)
    assert isinstance(error, OAuthRefused) and error.error == "invalid_request"
    assert "the client is disabled" in error.message
