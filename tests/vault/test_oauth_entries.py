"""An oauth entry: the refresh token and client secret sealed like every value, the granted
scopes and issuer in the clear for `sp vault list`, every malformed field refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.vault import EntryError
from safeport.vault.credentials import check_value
from safeport.vault.secrets import OAuthSecret, SecretBytes
from tests.vault.vault_factory import make_vault, passphrase

REFRESH = b"CANARY-REFRESH-9d1c"
CLIENT_SECRET = b"CANARY-CLIENT-SECRET-5e2b"


def _grant(**extra: SecretBytes | str) -> dict[str, SecretBytes | str]:
    value: dict[str, SecretBytes | str] = {
        "refresh_token": SecretBytes(REFRESH),
        "scopes": "openid read:issues",
        "issuer": "https://idp.example",
    }
    value.update(extra)
    return value


def test_a_grant_round_trips_with_its_scopes_shown_and_its_tokens_sealed(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    vault.add("tracker", "oauth", _grant(client_secret=SecretBytes(CLIENT_SECRET)))
    vault.lock()
    reopened = store.unlock(passphrase())
    info = {e.name: e for e in reopened.entries()}
    assert info["tracker"].kind == "oauth"
    assert info["tracker"].scopes == ("openid", "read:issues")
    assert info["tracker"].as_json()["scopes"] == ["openid", "read:issues"]
    assert info["deploy-token"].scopes is None and "scopes" not in info["deploy-token"].as_json()
    secret = reopened.secret("tracker")
    assert isinstance(secret, OAuthSecret)
    assert secret.refresh_token is not None and secret.refresh_token.reveal() == REFRESH
    assert secret.client_secret is not None and secret.client_secret.reveal() == CLIENT_SECRET
    assert (secret.access_token, secret.issuer) == (None, "https://idp.example")
    for shown in (repr(secret), str(secret), repr(info["tracker"])):
        assert b"CANARY" not in shown.encode()
    assert REFRESH not in store.path.read_bytes()


def test_a_rotation_replaces_the_refresh_token_and_keeps_the_kind(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    vault.add("tracker", "oauth", _grant())
    vault.rotate("tracker", _grant(refresh_token=SecretBytes(b"second"), scopes="openid"))
    secret = vault.secret("tracker")
    assert isinstance(secret, OAuthSecret) and secret.refresh_token is not None
    assert secret.refresh_token.reveal() == b"second"
    assert secret.scopes == ("openid",)


def test_a_provider_that_issues_only_a_lasting_access_token_is_held_too() -> None:
    secrets, plain = check_value(
        "gh", "oauth", {"access_token": SecretBytes(b"gho_x"), "scopes": "repo"}
    )
    assert set(secrets) == {"access_token"} and plain == {"scopes": "repo"}
    _, plain = check_value("none", "oauth", {"refresh_token": SecretBytes(b"r"), "scopes": ""})
    assert plain["scopes"] == ""


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ({"scopes": "read"}, "needs a refresh_token or an access_token"),
        ({"client_secret": SecretBytes(b"s")}, "needs a refresh_token or an access_token"),
        (_grant(refresh_token=SecretBytes(b"rt\r\nX-Evil: 1")), "control character"),
        (_grant(access_token=SecretBytes(b"at\n")), "control character"),
        (_grant(client_secret=SecretBytes(b"cs\x00")), "control character"),
        (_grant(refresh_token=SecretBytes(b"")), "is empty"),
        (_grant(scopes="read\nwrite"), "scope tokens"),
        (_grant(scopes='read "write"'), "scope tokens"),
        (_grant(scopes="read  write"), "scope tokens"),
        (_grant(scopes=" read"), "scope tokens"),
        (_grant(issuer="http://idp.example"), "https URL"),
        (_grant(issuer="https://idp.example/\x1b[2J"), "https URL"),
        (_grant(issuer="https://idp example"), "https URL"),
        (_grant(username="ci"), "takes the fields"),
        (_grant(token=SecretBytes(b"x")), "takes the fields"),
    ],
)
def test_a_malformed_grant_is_refused_by_field(
    value: dict[str, SecretBytes | str], complaint: str
) -> None:
    with pytest.raises(EntryError, match=complaint) as caught:
        check_value("tracker", "oauth", value)
    assert "rt\r" not in str(caught.value) and "cs\x00" not in str(caught.value)


def test_the_plain_fields_of_other_kinds_are_checked_as_before() -> None:
    with pytest.raises(EntryError, match="':'"):
        check_value("r", "basic", {"username": "a:b", "password": SecretBytes(b"p")})
    with pytest.raises(EntryError, match="takes the fields"):
        check_value("t", "token", {"token": SecretBytes(b"t"), "scopes": "read"})
