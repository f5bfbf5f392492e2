"""Property tests over the parsers of what answers the gateway from outside: a target service's
JSON body (the HTTPS executor's declared fields) and a security key's answer (the client data
JSON and the CBOR the authenticator wrote), as they arrive over the network or control.sock.

Each is refused with its own error (``ActionError`` ``bad_response``, ``KeyRefused``), never a
RecursionError, an OverflowError, a UnicodeError or any other foreign exception; a body the
service meant is read as the standard parser reads it. Budget: :mod:`tests.drills.fuzz_budget`
(``outside``).
"""

from __future__ import annotations

import json

from fido2.utils import websafe_encode
from hypothesis import example, given
from hypothesis import strategies as st

from safeport.action_gateway.approvals.key_checks import (
    KeyRefused,
    verify_assertion,
    verify_registration,
)
from safeport.action_gateway.executors.https.response_contract import extract_fields
from safeport.action_gateway.executors.interface import ActionError
from tests.drills.fuzz_budget import outside
from tests.drills.test_fuzz_outside_input import ALMOST_JSON, DEEP_PREFIX, VALUES

FIELDS = ["a", "a.b", "items"]


@outside
@given(DEEP_PREFIX, ALMOST_JSON)
@example("", '{"a":1,"a":2}')
@example("[" * 50_000, "")
@example("", '{"a":1e999}')
def test_any_service_body_is_its_declared_fields_or_a_bad_response(
    prefix: str, middle: str
) -> None:
    body = (prefix + middle).encode("utf-8", "surrogatepass")
    try:
        extract_fields(body, ["a"], service_id="svc")
    except ActionError as exc:
        assert exc.failure == "bad_response"


@outside
@given(st.dictionaries(st.sampled_from(["a", "b", "items", "x"]), VALUES, max_size=4))
def test_a_service_body_the_standard_parser_reads_gives_the_same_fields(
    document: dict[str, object],
) -> None:
    body = json.dumps(document).encode()
    present = [name for name in FIELDS if "." not in name and name in document]
    try:
        fields = extract_fields(body, present, service_id="svc")
    except ActionError as exc:
        assert exc.failure == "bad_response"  # a field nested past the bound
        return
    assert fields == {name: document[name] for name in present}


CBOR_PIECES = st.lists(
    st.sampled_from([b"\x81", b"\xa1", b"\x9f", b"\xbf", b"\xff", b"\x00", b"\x1b", b"\x5a"])
    | st.binary(max_size=8),
    max_size=60,
).map(b"".join)
CLIENT_DATA = st.one_of(
    ALMOST_JSON.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.integers(0, 3000).map(lambda n: b"[" * n),
    st.binary(max_size=600),
)


def _b64(data: bytes) -> str:
    return websafe_encode(data)


@outside
@given(CLIENT_DATA, CBOR_PIECES | st.integers(0, 3000).map(lambda n: b"\x81" * n), st.binary())
@example(b'{"type":"webauthn.get","crossOrigin":true,"crossOrigin":false}', b"", b"")
@example(b"[" * 3000, b"", b"")
def test_any_assertion_answer_is_refused_by_its_own_error(
    client_data: bytes, authenticator_data: bytes, signature: bytes
) -> None:
    response = {
        "id": _b64(b"k"),
        "rawId": _b64(b"k"),
        "type": "public-key",
        "response": {
            "clientDataJSON": _b64(client_data),
            "authenticatorData": _b64(authenticator_data),
            "signature": _b64(signature),
        },
    }
    try:
        verify_assertion("localhost", (), response, b"c" * 32, user_verification=False)
    except KeyRefused:
        return
    raise AssertionError("an assertion no enrolled key made was taken")


@outside
@given(CLIENT_DATA, CBOR_PIECES | st.integers(0, 3000).map(lambda n: b"\x81" * n))
@example(b'{"type":"webauthn.create"}', b"\xa1" * 3000)
def test_any_registration_answer_is_refused_by_its_own_error(
    client_data: bytes, attestation: bytes
) -> None:
    response = {
        "id": _b64(b"k"),
        "rawId": _b64(b"k"),
        "type": "public-key",
        "response": {
            "clientDataJSON": _b64(client_data),
            "attestationObject": _b64(attestation),
        },
    }
    try:
        verify_registration("localhost", b"u" * 16, response, b"c" * 32)
    except KeyRefused:
        return
    raise AssertionError("a registration over another challenge was taken")
