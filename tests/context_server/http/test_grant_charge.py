"""A token request's rate bucket, decided from its grant's signature (pure: keys made in the
test, time a parameter): a code or refresh token the gateway signed for a client is charged to
that client once the anonymous bucket is empty; anything forged stays anonymous."""

from __future__ import annotations

import base64
import copy
import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.utils import Buffer

from safeport.action_gateway.remote_clients.signing_key import SigningKey
from safeport.context_server.http.admission import Admission, Rate
from safeport.context_server.http.grant_charge import charge, signed_grant
from safeport.context_server.http.tokens import SigningKeys
from safeport.shared.grant_tokens import TOKEN_CHARS, mint, signed_for
from safeport.shared.schemas.oauth_wire import OAuthKeysResult

CLIENT = "sp-approved"
OTHER = "sp-other"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def gateway_key() -> SigningKey:
    return SigningKey.from_seed(secrets.token_bytes(32))


def public(key: SigningKey) -> Ed25519PublicKey:
    return key.private.public_key()


class Counting(Ed25519PublicKey):
    """A public key that counts its signature checks."""

    def __init__(self, key: Ed25519PublicKey) -> None:
        self.key = key
        self.checks = 0

    def verify(self, signature: Buffer, data: Buffer) -> None:
        self.checks += 1
        self.key.verify(signature, data)

    def public_bytes(self, encoding: Encoding, format: PublicFormat) -> bytes:
        return self.key.public_bytes(encoding, format)

    def public_bytes_raw(self) -> bytes:
        return self.key.public_bytes_raw()

    def __eq__(self, other: object) -> bool:
        return self.key == other

    def __hash__(self) -> int:
        return hash(self.key)

    def __copy__(self) -> Counting:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Counting:
        return Counting(copy.deepcopy(self.key, memo))


def refresh_form(token: str, client_id: str = CLIENT) -> dict[str, str]:
    return {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}


def test_a_grant_verifies_for_its_client_and_kind_only() -> None:
    key = gateway_key()
    token = mint("refresh", CLIENT, key.sign_bytes)
    assert len(token) == TOKEN_CHARS
    assert signed_for(token, "refresh", CLIENT, [public(key)])
    assert not signed_for(token, "refresh", OTHER, [public(key)])  # client id changed
    assert not signed_for(token, "code", CLIENT, [public(key)])  # a refresh token is no code
    assert not signed_for(token, "refresh", CLIENT, [public(gateway_key())])  # another key
    assert not signed_for(token, "refresh", CLIENT, [])  # no keys held: nothing verifies
    code = mint("code", CLIENT, key.sign_bytes)
    form = {"grant_type": "authorization_code", "code": code, "client_id": CLIENT}
    assert signed_grant(form, [public(key)]) == (CLIENT, code.split(".")[0])
    assert signed_grant(form | {"grant_type": "refresh_token"}, [public(key)]) is None


def test_forged_grants_are_not_signed_for_the_client() -> None:
    key = gateway_key()
    mine = mint("refresh", CLIENT, key.sign_bytes)
    theirs = mint("refresh", OTHER, key.sign_bytes)
    stranger = mint("refresh", CLIENT, gateway_key().sign_bytes)
    # This client's random part with the signature the gateway made for another client.
    spliced = mine.split(".")[0] + "." + theirs.split(".")[1]
    flipped = mine[:50] + ("A" if mine[50] != "A" else "B") + mine[51:]
    keys = [public(key)]
    for forged in (spliced, stranger, flipped, mine[:-1], mine + "A", mine.replace(".", "!")):
        assert signed_grant(refresh_form(forged), keys) is None, forged
    assert signed_grant(refresh_form(theirs, CLIENT), keys) is None  # client id changed
    assert signed_grant(refresh_form(mine, CLIENT + "\0"), keys) is None
    assert signed_grant(refresh_form(mine) | {"grant_type": "password"}, keys) is None
    assert signed_grant(refresh_form(mine), keys) == (CLIENT, mine.split(".")[0])


def test_the_signature_is_checked_only_once_the_anonymous_bucket_is_empty() -> None:
    key = gateway_key()
    counting = Counting(public(key))
    now = [0.0]
    admission = Admission(lambda: now[0], grant_rate=Rate(1, 2), anonymous_rate=Rate(1, 3))
    form = refresh_form(mint("refresh", CLIENT, key.sign_bytes))
    assert [charge(admission, form, [counting]) for _ in range(3)] == [None] * 3
    assert counting.checks == 0  # served from the anonymous bucket: nothing to gain
    assert charge(admission, form, [counting]) is None  # now from the grant's own bucket
    assert charge(admission, form, [counting]) is None
    assert counting.checks == 2
    wait = charge(admission, form, [counting])  # the grant's bucket is bounded too
    assert wait is not None and wait > 0


def test_a_forged_grant_is_charged_to_the_anonymous_bucket() -> None:
    key = gateway_key()
    now = [0.0]
    admission = Admission(lambda: now[0], client_rate=Rate(10, 10), anonymous_rate=Rate(1, 1))
    genuine = refresh_form(mint("refresh", CLIENT, key.sign_bytes))
    forged = refresh_form(mint("refresh", CLIENT, gateway_key().sign_bytes))
    assert charge(admission, forged, [public(key)]) is None  # the anonymous bucket's one
    for form in (forged, refresh_form("junk"), None):
        wait = charge(admission, form, [public(key)])
        assert wait is not None and wait > 0
    assert charge(admission, genuine, [public(key)]) is None
    assert charge(admission, genuine, []) is not None  # no keys held: anonymous


def test_keys_for_token_requests_are_only_those_already_held() -> None:
    fetches: list[int] = []

    async def fetch() -> OAuthKeysResult:
        fetches.append(1)
        raise OSError("the gateway is down")

    keys = SigningKeys(fetch, clock=lambda: 0.0)
    assert keys.cached() == ()
    assert fetches == []


@pytest.mark.anyio
async def test_a_failed_warm_up_leaves_the_first_tokens_fetch_allowed() -> None:
    key = gateway_key()
    up = [False]

    async def fetch() -> OAuthKeysResult:
        if not up[0]:
            raise OSError("the gateway is down")
        return OAuthKeysResult(keys=[key.public])

    keys = SigningKeys(fetch, clock=lambda: 0.0)
    await keys.warm()
    assert keys.cached() == ()
    up[0] = True
    assert await keys.key(key.kid) is not None  # not held back by the failed warm-up
    raw = base64.urlsafe_b64decode(key.x + "=")
    assert [k.public_bytes_raw() for k in keys.cached()] == [raw]
