"""The strict decoder for outside JSON (pure): each hostile shape refused with its one error,
the document next to it that is only unusual taken as it is."""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from safeport.shared.outside_json import (
    MAX_DEPTH,
    JsonRefused,
    jwt_parts,
    loads_object,
    loads_outside,
)

MIB = 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


HOSTILE = {
    "100,000 [": b"[" * 100_000,
    "100,000 {": b"{" * 100_000,
    "100,000 nested keys": b'{"a":' * 100_000,
    "nested and closed": b"[" * 50_000 + b"]" * 50_000,
    "mixed brackets, closed": b'[{"a":' * 20_000 + b"1" + b"}]" * 20_000,
    "one level too deep": b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
    "deep after a string with brackets": b'["]]]]",' + b"[" * 1000 + b"]" * 1000 + b"]",
    "deep after an escaped quote": b'["\\"]",' + b"[" * 1000 + b"]" * 1000 + b"]",
    "unterminated string after depth": b"[" * 100_000 + b'"',
    "unbalanced": b"[1]]",
    "mismatched": b"[1}",
    "1e999999": b"1e999999",
    "-1e999999 in an object": b'{"exp":-1e999999}',
    "10^5-digit integer": b"9" * 100_000,
    "65-digit integer": b"1" * 65,
    "long float": b"0." + b"1" * 100,
    "NaN": b'{"a":NaN}',
    "Infinity": b"[Infinity]",
    "-Infinity": b"-Infinity",
    "repeated key": b'{"client_id":"https://evil.example/","client_id":"https://good.example/"}',
    "repeated nested key": b'{"a":[{"b":1,"b":1}]}',
    "repeated key, one escaped": b'{"a":1,"\\u0061":2}',
    "lone high surrogate": b'{"client_name":"\\ud800"}',
    "lone low surrogate in a key": b'{"\\udc00":1}',
    "lone surrogate in a list": b'["ok","\\udfff"]',
    "reversed pair": b'"\\udc00\\ud800"',
    "invalid UTF-8": b'{"a":"\xff"}',
    "UTF-8-encoded surrogate": b'{"a":"\xed\xa0\x80"}',
    "overlong UTF-8": b'{"a":"\xc0\xaf"}',
    "raw NUL": b'{"a":1}\x00',
    "raw NUL in a string": b'{"a":"\x00"}',
    "empty": b"",
    "BOM": b"\xef\xbb\xbf{}",
    "trailing junk": b"{} {}",
}


@pytest.mark.parametrize("data", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_hostile_shape_is_refused_with_the_one_error(data: bytes) -> None:
    with pytest.raises(JsonRefused):
        loads_outside(data, max_bytes=MIB)


def test_a_document_over_the_size_bound_is_refused_before_it_is_read() -> None:
    with pytest.raises(JsonRefused, match="too large"):
        loads_outside(b"[" + b"1," * 600_000 + b"1]", max_bytes=MIB)


def test_the_refusal_never_carries_the_input() -> None:
    with pytest.raises(JsonRefused) as caught:
        loads_outside(b'{"secret-CANARY":NaN}', max_bytes=MIB)
    assert "CANARY" not in str(caught.value) and caught.value.__cause__ is None


# Strings that never close, each with many escaped quotes in it: a cut of the strings that
# started again at each of those quotes would read the rest of the text from each (quadratic).
UNTERMINATED = {
    "escaped quotes": b'"' + b'\\"' * 500_000,
    "escaped quotes, a lone backslash last": b'"' + b'\\"' * 500_000 + b"\\",
    "escaped quotes after a key": b'{"a":"' + b'\\"' * 500_000,
    "escaped quotes and backslashes": b'["' + b'\\\\\\"' * 250_000,
    "escaped quotes after depth": b"[" * 60 + b'"' + b'\\"' * 500_000,
}
# Linear time reads a mebibyte of these in well under a second on a loaded machine; the
# quadratic search took about 45 s for 64 KiB, and would take hours here.
WITHIN_SECONDS = 60


def test_unterminated_strings_full_of_escaped_quotes_are_refused_in_linear_time() -> None:
    """In a child process, so a search that never ends fails the test instead of hanging it."""
    code = (
        "import pickle, sys\n"
        "from safeport.shared.outside_json import JsonRefused, loads_outside\n"
        "for data in pickle.load(sys.stdin.buffer):\n"
        "    try:\n"
        f"        loads_outside(data, max_bytes={MIB + 16})\n"
        "    except JsonRefused:\n"
        "        continue\n"
        "    sys.exit('taken')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps(list(UNTERMINATED.values())),
        capture_output=True,
        timeout=WITHIN_SECONDS,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


ORDINARY: dict[str, tuple[bytes, Any]] = {
    "exactly the deepest allowed": (
        b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
        json.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH),
    ),
    "brackets inside a string": (b'{"a":"' + b"[" * 100_000 + b'"}', {"a": "[" * 100_000}),
    "escaped quotes and backslashes": (b'["\\"[[","\\\\",{"]":"{"}]', ['"[[', "\\", {"]": "{"}]),
    "a surrogate pair": (b'"\\ud83d\\ude00"', "\U0001f600"),
    "non-ASCII text": ('{"name":"Zoë — 東京"}'.encode(), {"name": "Zoë — 東京"}),
    "an escaped NUL": (b'"a\\u0000b"', "a\x00b"),
    "64-bit integers and doubles": (
        b"[18446744073709551615,-9223372036854775808,1.7976931348623157e308,5e-324]",
        [18446744073709551615, -9223372036854775808, 1.7976931348623157e308, 5e-324],
    ),
    "equal values under different keys": (b'{"a":1,"A":1,"a ":1}', {"a": 1, "A": 1, "a ": 1}),
    "the same key in sibling objects": (b'[{"a":1},{"a":2}]', [{"a": 1}, {"a": 2}]),
    "a wide document": (b"[" + b"[]," * 100_000 + b"[]]", [[]] * 100_001),
    "whitespace around": (b' \n\t{"a" : [ 1 , 2 ] }\r\n', {"a": [1, 2]}),
}


@pytest.mark.parametrize(("data", "value"), ORDINARY.values(), ids=ORDINARY.keys())
def test_ordinary_json_is_taken_as_it_is(data: bytes, value: Any) -> None:
    assert loads_outside(data, max_bytes=MIB) == value
    assert loads_outside(data.decode(), max_bytes=MIB) == value


def test_a_registration_document_is_an_object_and_a_list_is_not() -> None:
    document = {"client_name": "Editor", "redirect_uris": ["http://127.0.0.1:3/cb"]}
    assert loads_object(json.dumps(document).encode(), max_bytes=MIB) == document
    with pytest.raises(JsonRefused, match="not an object"):
        loads_object(b"[1]", max_bytes=MIB)


def test_the_standard_parser_crashes_on_what_the_strict_one_refuses() -> None:
    """Why the class exists: the standard library's parser lets each of these through or
    raises what no caller expected (and the JWT library parses a token's parts with it)."""
    with pytest.raises(RecursionError):
        json.loads(b"[" * 100_000)
    assert json.loads(b'{"a":1,"a":2}') == {"a": 2}
    assert json.loads(b"1e999999") == float("inf")


# -- the parts of a JWT ----------------------------------------------------------------------------

KEY = Ed25519PrivateKey.generate()


def test_a_signed_tokens_header_and_payload_are_read() -> None:
    token = jwt.encode({"sub": "c", "exp": 1}, KEY, algorithm="EdDSA", headers={"kid": "k1"})
    header, payload = jwt_parts(token)
    assert header["kid"] == "k1" and header["alg"] == "EdDSA"
    assert json.loads(payload) == {"sub": "c", "exp": 1}


def _token(header: bytes, payload: bytes = b'{"sub":"c"}') -> str:
    return f"{_b64(header)}.{_b64(payload)}.{_b64(b'x' * 64)}"


@pytest.mark.parametrize(
    "token",
    [
        _token(b"[" * 5000),
        _token(b'{"alg":"EdDSA","kid":"k1"}', b"[" * 5000),
        _token(b'{"alg":"EdDSA","alg":"none","kid":"k1"}'),
        _token(b'{"alg":"EdDSA","kid":"k1"}', b'{"exp":1e999999}'),
        _token(b'{"alg":"EdDSA","kid":"k1"}', b'{"exp":NaN}'),
        _token(b'{"alg":"EdDSA","kid":"\\ud800"}'),
        _token(b"\xff\xfe"),
        _token(b"[]"),
        "a.b",
        "a.b.c.d",
        "!!!.e30.sig",
        _token(b'{"alg":"EdDSA"}') + "=",
        "e30.e30." + "A" * 10_000,
    ],
)
def test_a_hostile_tokens_parts_are_refused(token: str) -> None:
    with pytest.raises(JsonRefused):
        jwt_parts(token)
