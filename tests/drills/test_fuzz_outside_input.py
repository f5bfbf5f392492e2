"""Property tests over every parser of outside input that needs no server: the strict JSON
decoder, socket frames, the parts of a JWT and the checks of both token verifiers, signed grant
tokens, fetched client metadata documents and the ``/mcp`` body check.

Each property says what holds for every input: it is refused with the parser's own error (never
a RecursionError, an OverflowError, a UnicodeError or any other foreign exception), and what is
accepted is what the standard parser would read, within the bounds. Budget:
:mod:`tests.drills.fuzz_budget` (``outside``: derandomized, 300 examples each unless
``SAFEPORT_FUZZ_EXAMPLES`` says otherwise).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from starlette.types import Message

from safeport.action_gateway.remote_clients.metadata_documents import DocumentRefused, _document
from safeport.action_gateway.remote_clients.signing_key import SigningKey, TokenRejected
from safeport.context_server.http.mcp_body import checked_body
from safeport.context_server.http.tokens import SigningKeys, TokenChecker
from safeport.errors import WireError
from safeport.shared.grant_tokens import signed_for
from safeport.shared.outside_json import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    JsonRefused,
    jwt_parts,
    loads_outside,
)
from safeport.shared.schemas.oauth_wire import OAuthKeysResult
from safeport.shared.wire import decode_payload
from tests.drills.fuzz_budget import outside

MIB = 1024 * 1024

# Pieces of JSON and of the attacks on its parsers; joined at random they make text that is
# almost JSON, often deep, with repeated keys, odd numbers, escapes and surrogates.
PIECES = [
    "[", "]", "{", "}", ",", ":", '"', "\\", '\\"', "\\\\", "\\u", "d800", "\\ud800", "\\udc00",
    "\\ud83d\\ude00", "\\u0000", "NaN", "Infinity", "-Infinity", "1e999999", "-1e400", "-", "0",
    "1", "9" * 70, "1" * 5000, ".5", "e5", "E-", "true", "false", "null", " ", "\n", "\x00",
    '"a"', '"a":', '"a":1,"a":2', '{"a":1', '"é"', "é", "\ufeff", "[" * 70, "]" * 70,
    '{"k":' * 70, "}" * 70,
]  # fmt: skip
ALMOST_JSON = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
DEEP_PREFIX = st.integers(0, 3000).map(lambda n: "[" * n)

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=25,
)


def _depth(value: Any) -> int:
    pending, deepest = [(value, 0)], 0
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth) for child in children)
    return deepest


# -- the decoder -----------------------------------------------------------------------------------


@outside
@given(st.binary(max_size=2048))
def test_any_bytes_are_a_value_or_refused(data: bytes) -> None:
    try:
        loads_outside(data, max_bytes=MIB)
    except JsonRefused:
        return


@outside
@given(DEEP_PREFIX, ALMOST_JSON, st.sampled_from(["", "]" * 3000, "}" * 3000, '"']))
@example("", "[" * 100_000, "")
@example("", '{"a":1,"a":2}', "")
@example("", '"\\ud800"', "")
def test_almost_json_is_what_the_standard_parser_reads_or_refused(
    prefix: str, middle: str, suffix: str
) -> None:
    text = prefix + middle + suffix
    for data in (text, text.encode("utf-8", "surrogatepass")):
        try:
            value = loads_outside(data, max_bytes=MIB)
        except JsonRefused:
            continue
        assert value == json.loads(text)
        assert _depth(value) <= MAX_DEPTH
        # It can be sent on as it came: no NaN, no lone surrogate to fail the encoding later.
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")


@outside
@given(VALUES)
def test_every_value_within_the_bounds_survives_a_round_trip(value: Any) -> None:
    assert loads_outside(json.dumps(value), max_bytes=MIB) == value


@outside
@given(
    st.integers(0, 3 * MAX_DEPTH),
    st.integers(0, 2 ** (3 * MAX_DEPTH)),
    st.sampled_from(["1", '"["']),
)
def test_nesting_is_taken_up_to_the_bound_and_refused_past_it(
    depth: int, kinds: int, leaf: str
) -> None:
    """``kinds``: bit n says whether level n is a list or an object."""
    openers = ["[" if kinds >> n & 1 else '{"k":' for n in range(depth)]
    closers = "".join("]" if o == "[" else "}" for o in reversed(openers))
    text = "".join(openers) + leaf + closers
    if depth <= MAX_DEPTH:
        assert loads_outside(text, max_bytes=MIB) == json.loads(text)
        return
    try:
        loads_outside(text, max_bytes=MIB)
    except JsonRefused:
        return
    raise AssertionError("a document past the depth bound was taken")


@outside
@given(
    st.integers(1, 3 * MAX_NUMBER_CHARS),
    st.sampled_from(["", "-"]),
    st.sampled_from(["", ".5", "e3", "E-2"]),
)
def test_a_number_is_taken_up_to_its_length_bound_and_refused_past_it(
    digits: int, sign: str, tail: str
) -> None:
    text = sign + "1" + "0" * (digits - 1) + tail
    for document in (text, f'{{"n":[{text}]}}'):
        if len(text) <= MAX_NUMBER_CHARS:
            assert loads_outside(document, max_bytes=MIB) == json.loads(document)
            continue
        try:
            loads_outside(document, max_bytes=MIB)
        except JsonRefused:
            continue
        raise AssertionError("a number past the length bound was taken")


@outside
@given(st.dictionaries(st.text(max_size=8), VALUES, min_size=1, max_size=6), st.data())
def test_an_object_with_a_repeated_key_is_refused_wherever_it_is(
    document: dict[str, Any], data: st.DataObject
) -> None:
    key = data.draw(st.sampled_from(sorted(document)))
    pairs = [json.dumps(k) + ":" + json.dumps(v) for k, v in document.items()]
    pairs.insert(data.draw(st.integers(0, len(pairs))), json.dumps(key) + ":null")
    nested = "{" + ",".join(pairs) + "}"
    for text in (nested, f'{{"outer":[1,{nested}]}}', f"[{nested}]"):
        try:
            loads_outside(text, max_bytes=MIB)
        except JsonRefused:
            continue
        raise AssertionError("a repeated key was taken")


@outside
@given(DEEP_PREFIX, ALMOST_JSON)
def test_any_frame_payload_is_an_object_or_a_wire_error(prefix: str, middle: str) -> None:
    try:
        assert isinstance(decode_payload((prefix + middle).encode("utf-8", "surrogatepass")), dict)
    except WireError:
        return


# -- tokens ----------------------------------------------------------------------------------------

SIGNING = SigningKey.from_seed(b"\x07" * 32)
ISSUER = "https://tunnel.example"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _text64(text: str) -> str:
    return _b64(text.encode("utf-8", "surrogatepass"))


def _jws(header: str, payload: str, signature: bytes) -> str:
    return f"{_text64(header)}.{_text64(payload)}.{_b64(signature)}"


TOKENS = st.one_of(
    st.text(max_size=300),
    st.builds(
        _jws,
        st.sampled_from([f'{{"alg":"EdDSA","kid":"{SIGNING.kid}"', '{"alg":"EdDSA"', "{"])
        .flatmap(lambda head: st.tuples(st.just(head), ALMOST_JSON))
        .map("".join),
        st.tuples(DEEP_PREFIX, ALMOST_JSON).map("".join),
        st.binary(max_size=80),
    ),
)


async def _no_keys() -> OAuthKeysResult:
    return OAuthKeysResult(keys=[SIGNING.public])


CHECKER = TokenChecker(SigningKeys(_no_keys), ISSUER, ISSUER + "/mcp")


@outside
@given(TOKENS)
def test_any_token_is_parsed_or_refused_by_both_verifiers(token: str) -> None:
    with contextlib.suppress(JsonRefused):
        jwt_parts(token)
    assert asyncio.run(CHECKER.verify(token)) is None  # nothing here is signed by the key
    try:
        SIGNING.verify(token, issuer=ISSUER, audience=ISSUER + "/mcp", now=1.0)
    except TokenRejected:
        return
    raise AssertionError("an unsigned token was taken")


@outside
@given(st.text(max_size=200), st.sampled_from(["code", "refresh"]), st.text(max_size=600))
def test_any_grant_token_is_signed_or_not_never_an_error(
    token: str, kind: str, client_id: str
) -> None:
    key = SIGNING.private.public_key()
    assert signed_for(token, kind, client_id, [key]) is False  # type: ignore[arg-type]


# -- fetched metadata documents --------------------------------------------------------------------

URL = "https://client.example/meta.json"
DOCUMENT_PIECES = st.sampled_from(
    [f'"client_id":"{URL}"', '"redirect_uris":["https://client.example/cb"]', '"client_name":']
)


@outside
@given(DEEP_PREFIX, st.lists(DOCUMENT_PIECES | st.sampled_from(PIECES), max_size=30))
def test_any_metadata_document_is_a_client_or_refused(prefix: str, pieces: list[str]) -> None:
    body = (prefix + "{" + ",".join(pieces) + "}").encode("utf-8", "surrogatepass")
    try:
        document = _document(URL, body)
    except DocumentRefused:
        return
    assert document.client_id == URL


# -- the /mcp body check ---------------------------------------------------------------------------


@outside
@given(DEEP_PREFIX, ALMOST_JSON)
def test_an_mcp_body_is_passed_on_unchanged_or_answered_with_the_parse_error(
    prefix: str, middle: str
) -> None:
    body = (prefix + middle).encode("utf-8", "surrogatepass")
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    async def run() -> bytes | None:
        replayed = await checked_body(receive, send)
        return None if replayed is None else (await replayed())["body"]

    passed = asyncio.run(run())
    if passed is None:
        assert sent[0]["status"] == 400
        assert json.loads(sent[1]["body"])["error"]["code"] == -32700
    else:
        assert passed == body and not sent
