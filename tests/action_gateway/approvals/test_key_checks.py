"""The pure half of key approvals: what a challenge binds, what an assertion must hold (python-
fido2's server checks plus the counter), and which policy edits turn the key off."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from fido2.ctap2.base import Ctap2
from fido2.utils import websafe_decode, websafe_encode
from fido2.webauthn import CollectedClientData

from harness.gateway import POLICY
from harness.soft_authenticator import SoftAuthenticator
from safeport.action_gateway.approvals.key_checks import (
    EnrolledKey,
    KeyRefused,
    admin_challenge,
    card_challenge,
    verify_assertion,
    verify_registration,
)
from safeport.action_gateway.policy.approval_factor import key_factor, loosens_factor
from safeport.action_gateway.policy.meaning import meaning_of_edit
from safeport.gateway_client.security_key import KeySigner
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.schemas.key_wire import (
    KeyChallengeResult,
    KeyChoice,
    KeyRequest,
    origin_of,
)

RP = "gw-test.safeport.invalid"
BASE = ("c-1", "a" * 64, "b" * 64, 1_900_000_000)


def _enrolled(key: SoftAuthenticator) -> EnrolledKey:
    challenge = admin_challenge("enroll", "blue", "nonce")
    issued = KeyChallengeResult(
        request=KeyRequest(rp_id=RP, challenge=websafe_encode(challenge),
                           user_verification=False, keys=[]),
        user_id=websafe_encode(b"u" * 16), expires_in_s=120,
    )  # fmt: skip
    key.touch.set()
    registration = KeySigner(key).register(issued, "blue")
    response = {"type": "public-key", "response": {
        "clientDataJSON": registration.client_data,
        "attestationObject": registration.attestation_object}}  # fmt: skip
    key_id, public_key, counter = verify_registration(RP, b"u" * 16, response, challenge)
    return EnrolledKey(key_id, "blue", public_key, counter, "2026-01-01T00:00:00+00:00")


def _signed(key: SoftAuthenticator, enrolled: EnrolledKey, challenge: bytes) -> dict[str, Any]:
    """The key's assertion over ``challenge``, as the gateway receives it (one touch)."""
    key.touch.set()
    choice = KeyChoice(id=enrolled.id, name=enrolled.name)
    request = KeyRequest(
        rp_id=RP, challenge=websafe_encode(challenge), user_verification=False, keys=[choice]
    )
    signed = KeySigner(key).sign(request)
    inner = {
        "clientDataJSON": signed.client_data,
        "authenticatorData": signed.authenticator_data,
        "signature": signed.signature,
    }
    cid = signed.credential_id
    return {"id": cid, "rawId": cid, "type": "public-key", "response": inner}


def _assert(
    key: SoftAuthenticator, enrolled: EnrolledKey, challenge: bytes, *, uv: bool = False
) -> EnrolledKey:
    response = _signed(key, enrolled, challenge)
    return verify_assertion(RP, (enrolled,), response, challenge, user_verification=uv)


def test_a_card_challenge_binds_every_field_and_is_stable() -> None:
    first = card_challenge(*BASE)
    assert first == card_challenge(*BASE) and len(first) == 32
    for index, other in enumerate(("c-2", "c" * 64, "d" * 64, BASE[3] + 1)):
        changed = list(BASE)
        changed[index] = other
        assert card_challenge(*changed) != first  # type: ignore[arg-type]
    assert admin_challenge("remove", "k", "n") != admin_challenge("enroll", "k", "n")


def test_an_honest_assertion_moves_the_counter_and_the_same_counter_is_refused() -> None:
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    used = _assert(key, enrolled, card_challenge(*BASE))
    assert used.counter > enrolled.counter
    key.knobs.counter_fixed = used.counter
    with pytest.raises(KeyRefused, match="cloned"):
        _assert(key, used, card_challenge(*BASE))


def test_a_key_without_a_counter_reports_zero_and_is_accepted_while_both_are_zero() -> None:
    key = SoftAuthenticator()
    key.knobs.counter_fixed = 0
    enrolled = _enrolled(key)
    assert _assert(key, enrolled, card_challenge(*BASE)).counter == 0
    with pytest.raises(KeyRefused, match="cloned"):  # once it counted, 0 is going backwards
        _assert(key, EnrolledKey(enrolled.id, "blue", enrolled.public_key, 5, ""), b"x" * 32)


def test_user_verification_asked_by_the_policy_is_enforced() -> None:
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    with pytest.raises(KeyRefused, match="verif"):
        _assert(key, enrolled, card_challenge(*BASE), uv=True)


def test_an_assertion_over_another_challenge_is_refused() -> None:
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    response = _signed(key, enrolled, card_challenge(*BASE))
    other = card_challenge("c-2", BASE[1], BASE[2], BASE[3])
    with pytest.raises(KeyRefused, match="challenge"):
        verify_assertion(RP, (enrolled,), response, other, user_verification=False)


KEYED = POLICY.replace(
    'approval = "per-call"\n', 'approval = "per-call"\napproval_factor = "key"\n', 1
)
GLOBAL = POLICY + '\n[approvals]\napproval_factor = "key"\n'


def test_which_edits_turn_the_key_off() -> None:
    plain, keyed, everywhere = (parse_gateway_policy(t)[0] for t in (POLICY, KEYED, GLOBAL))
    assert key_factor(keyed, "build-key") and not key_factor(keyed, "session-key")
    assert key_factor(everywhere, "session-key")
    assert loosens_factor(keyed, plain) and loosens_factor(everywhere, keyed)
    assert not loosens_factor(plain, keyed) and not loosens_factor(None, plain)
    assert not loosens_factor(keyed, everywhere)


def test_the_diff_of_meaning_says_turning_the_key_off_loosens() -> None:
    off = meaning_of_edit(KEYED, parse_gateway_policy(POLICY)[0])
    on = meaning_of_edit(POLICY, parse_gateway_policy(GLOBAL)[0])
    assert all("approval_factor" in c.text for c in (*off, *on))
    assert [c.weight for c in off] == ["loosened"]
    assert [c.weight for c in on] == ["tightened"]


def _signed_over(
    key: SoftAuthenticator, enrolled: EnrolledKey, client_data: CollectedClientData
) -> dict[str, Any]:
    """An assertion whose client data the caller wrote (not python-fido2's client)."""
    key.touch.set()
    allow: list[Mapping[str, Any]] = [{"type": "public-key", "id": websafe_decode(enrolled.id)}]
    signed = Ctap2(key).get_assertion(RP, client_data.hash, allow)
    inner = {
        "clientDataJSON": websafe_encode(client_data),
        "authenticatorData": websafe_encode(signed.auth_data),
        "signature": websafe_encode(signed.signature),
    }
    return {"id": enrolled.id, "rawId": enrolled.id, "type": "public-key", "response": inner}


def test_client_data_from_a_frame_of_another_origin_is_refused() -> None:
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    challenge = card_challenge(*BASE)
    origin = origin_of(RP)
    plain = CollectedClientData.create("webauthn.get", challenge, origin)
    used = verify_assertion(
        RP, (enrolled,), _signed_over(key, enrolled, plain), challenge, user_verification=False
    )
    for framed in (
        CollectedClientData.create("webauthn.get", challenge, origin, cross_origin=True),
        CollectedClientData.create(
            "webauthn.get", challenge, origin, topOrigin="https://elsewhere.example"
        ),
    ):
        response = _signed_over(key, used, framed)
        with pytest.raises(KeyRefused, match="another origin"):
            verify_assertion(RP, (used,), response, challenge, user_verification=False)


def test_a_signature_under_another_enrolled_keys_id_and_a_counter_at_its_top_are_refused() -> None:
    blue, green = SoftAuthenticator(), SoftAuthenticator()
    blue_key, green_key = _enrolled(blue), _enrolled(green)
    challenge = card_challenge(*BASE)
    ring = (blue_key, green_key)
    signed = _signed(blue, blue_key, challenge)
    assert verify_assertion(RP, ring, signed, challenge, user_verification=False).id == blue_key.id
    # Blue's signature presented as green's: checked against green's public key.
    relabelled = {**_signed(blue, blue_key, challenge), "id": green_key.id, "rawId": green_key.id}
    with pytest.raises(KeyRefused, match="signature"):
        verify_assertion(RP, ring, relabelled, challenge, user_verification=False)
    # A counter at 2^32-1 cannot be followed: not by the same value, nor by a wrap to 0.
    top = replace(blue_key, counter=2**32 - 1)
    for counter in (2**32 - 1, 0):
        blue.knobs.counter_fixed = counter
        with pytest.raises(KeyRefused, match="cloned"):
            _assert(blue, top, challenge)


# -- what the approver's client wrote, read before the signature over it is checked ------------


def test_client_data_that_repeats_cross_origin_is_refused_though_the_key_signed_it() -> None:
    """The standard parser keeps the last of a repeated key: ``crossOrigin`` true then false
    would pass as false. The strict decoder refuses the document instead."""
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    challenge = card_challenge(*BASE)
    start = CollectedClientData.create("webauthn.get", challenge, origin_of(RP))
    assert start.endswith(b"}")
    honest = _signed_over(key, enrolled, start)  # the same client data, each key once: taken
    enrolled = verify_assertion(RP, (enrolled,), honest, challenge, user_verification=False)
    for repeated in (
        b',"crossOrigin":true,"crossOrigin":false}',
        b',"topOrigin":"https://elsewhere.example","topOrigin":null}',
        b',"type":"webauthn.create"}',
    ):
        written = CollectedClientData(bytes(start[:-1]) + repeated)
        response = _signed_over(key, enrolled, written)
        with pytest.raises(KeyRefused, match="malformed"):
            verify_assertion(RP, (enrolled,), response, challenge, user_verification=False)


@pytest.mark.parametrize(
    "client_data",
    [
        b"[" * 3000,
        b'{"type":"webauthn.get","x":' + b"{" * 1500,
        b'{"type":"webauthn.get","challenge":NaN}',
        b'{"type":"webauthn.get","origin":"\\ud800"}',
        b"\xff\xfe",
    ],
    ids=["3000 [", "nested under a field", "NaN", "lone surrogate", "not UTF-8"],
)
def test_hostile_client_data_is_a_malformed_answer_not_an_exception(client_data: bytes) -> None:
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    challenge = card_challenge(*BASE)
    response = _signed(key, enrolled, challenge)
    response["response"] = {**response["response"], "clientDataJSON": websafe_encode(client_data)}
    with pytest.raises(KeyRefused, match="malformed"):
        verify_assertion(RP, (enrolled,), response, challenge, user_verification=False)
    registration = {"type": "public-key", "response": {
        "clientDataJSON": websafe_encode(client_data),
        "attestationObject": websafe_encode(b"\xa0")}}  # fmt: skip
    with pytest.raises(KeyRefused, match="malformed"):
        verify_registration(RP, b"u" * 16, registration, admin_challenge("enroll", "b", "n"))


def test_deeply_nested_cbor_from_the_key_is_refused_not_an_exception() -> None:
    """CBOR has no strict decoder here: python-fido2 reads it recursively, and a nesting deeper
    than the interpreter's stack (3 KiB fits 3000 levels) is caught as a refusal."""
    key = SoftAuthenticator()
    enrolled = _enrolled(key)
    challenge = card_challenge(*BASE)
    response = _signed(key, enrolled, challenge)
    # Authenticator data with the extensions flag (0x80) and nested maps as its extensions.
    deep = b"\0" * 32 + b"\x81" + b"\0\0\0\x05" + b"\xa1\x00" * 1500 + b"\x00"
    response["response"] = {**response["response"], "authenticatorData": websafe_encode(deep)}
    with pytest.raises(KeyRefused, match="malformed"):
        verify_assertion(RP, (enrolled,), response, challenge, user_verification=False)
    issued = admin_challenge("enroll", "blue", "nonce")
    key.touch.set()
    good = KeySigner(key).register(
        KeyChallengeResult(
            request=KeyRequest(rp_id=RP, challenge=websafe_encode(issued),
                               user_verification=False, keys=[]),
            user_id=websafe_encode(b"u" * 16), expires_in_s=120,
        ),
        "blue",
    )  # fmt: skip
    registration = {"type": "public-key", "response": {
        "clientDataJSON": good.client_data,
        "attestationObject": websafe_encode(b"\x81" * 3000 + b"\x00")}}  # fmt: skip
    with pytest.raises(KeyRefused, match="registration does not hold"):
        verify_registration(RP, b"u" * 16, registration, issued)
