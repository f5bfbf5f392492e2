"""Attacks on the pure guards the executors rely on: hosts, addresses, arguments, echo forms.

These need no network; the same attacks run end to end in test_attacks_https.py and
test_attacks_ssh.py.
"""

from __future__ import annotations

import base64
import ipaddress
import json

import pytest

from safeport.action_gateway.executors.https.address_policy import check_addresses, classify
from safeport.action_gateway.executors.https.response_contract import (
    MAX_FIELD_DEPTH,
    contains_credential,
    credential_forms,
    extract_fields,
)
from safeport.action_gateway.executors.https.target import normalise_host, service_origin
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.policy.arguments import ArgumentRejected, validate_args
from safeport.shared.schemas.config_params import ParamSpec

TOKEN = "CANARY-token-7f3a9c"


@pytest.mark.parametrize(
    "host",
    ["api.example.com\u3002", "api.example.com\uff0e", "API.EXAMPLE.COM\uff61"],
)
def test_a_trailing_dot_spelled_as_a_unicode_full_stop_is_refused(host: str) -> None:
    with pytest.raises(ActionError, match="trailing dot"):
        normalise_host(host)


@pytest.mark.parametrize(
    ("host", "normal"),
    [("api\uff0eexample.com", "api.example.com"), ("\uff41pi.example.com", "api.example.com")],
)
def test_unicode_dots_and_fullwidth_letters_inside_a_name_normalise_to_the_same_name(
    host: str, normal: str
) -> None:
    assert normalise_host(host) == normal


@pytest.mark.parametrize(
    "base_url",
    [
        "https://api.example.com:0",
        "https://api.example.com\\@evil.example",
        "https://evil.example\\.api.example.com",
        "https://api.example.com#@evil.example",
        "https://[::ffff:127.0.0.1]",
        "https://0177.0.0.1",
        "https://xn--api.example.com",
    ],
)
def test_a_base_url_that_could_reach_another_origin_is_refused(base_url: str) -> None:
    with pytest.raises(ActionError):
        service_origin(base_url)


@pytest.mark.parametrize(
    "address",
    [
        "::ffff:169.254.169.254",
        "::ffff:0:a9fe:a9fe",
        "::a9fe:a9fe",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::a9fe:a9fe",
        "64:ff9b:1:ffff::a9fe:a9fe",
        "2002:a9fe:a9fe::1",
        "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo to 169.254.169.254 (obfuscated)
        "fd00:ec2::254",
        "100.100.100.200",
        "0.0.0.0",
        "::",
        "255.255.255.255",
        "224.0.0.251",
        "ff02::fb",
    ],
)
def test_embedded_and_special_addresses_are_refused_even_for_private_services(
    address: str,
) -> None:
    assert classify(ipaddress.ip_address(address)).verdict == "refused"
    allowed, refusal = check_addresses([ipaddress.ip_address(address)], allow_private=True)
    assert allowed == [] and refusal is not None


@pytest.mark.parametrize("address", ["::ffff:0:7f00:1", "::7f00:1", "64:ff9b:1::a00:1"])
def test_embedded_private_addresses_stay_private(address: str) -> None:
    assert classify(ipaddress.ip_address(address)).verdict == "private"


def test_an_int_param_without_bounds_must_still_be_a_64_bit_integer() -> None:
    spec = {"n": ParamSpec(type="int")}
    assert validate_args(spec, {"n": 2**63 - 1}) == {"n": 2**63 - 1}
    assert validate_args(spec, {"n": -(2**63)}, allow_leading_dash=["n"]) == {"n": -(2**63)}
    for value in (2**63, -(2**63) - 1, 10**5000):
        with pytest.raises(ArgumentRejected, match="64-bit"):
            validate_args(spec, {"n": value}, allow_leading_dash=["n"])


@pytest.mark.parametrize(
    "echo",
    [
        TOKEN,
        TOKEN.upper(),
        TOKEN.encode().hex(),
        base64.b64encode(f"Bearer {TOKEN}".encode()).decode(),
        base64.b64encode(f"Bearer  {TOKEN}".encode()).decode(),
        base64.b64encode(f'{{"authorization": "Bearer {TOKEN}"}}'.encode()).decode(),
        base64.urlsafe_b64encode(f"\xff\xfe{TOKEN}".encode("latin-1")).decode(),
        "CANARY%2Dtoken-7f3a9c".replace("%2D", "-"),
    ],
)
def test_every_common_encoding_of_the_credential_is_recognised(echo: str) -> None:
    assert contains_credential(f"prefix {echo} suffix", credential_forms(TOKEN))


@pytest.mark.parametrize(
    "text",
    ["running", "r42", "deployment of worker finished", base64.b64encode(b"hello world").decode()],
)
def test_ordinary_fields_are_not_mistaken_for_the_credential(text: str) -> None:
    assert not contains_credential(text, credential_forms(TOKEN))


def test_a_short_secret_is_found_only_whole() -> None:
    # Shorter than a piece: only the whole secret counts, in any of the decoded views.
    forms = credential_forms("abcd")
    assert contains_credential("xx abcd yy", forms)
    assert contains_credential(base64.b64encode(b"Bearer abcd").decode(), forms)
    assert not contains_credential("abc bcd", forms)


def test_a_field_nested_past_the_limit_is_refused_and_one_at_it_passes() -> None:
    def nested(depth: int) -> bytes:
        return b'{"f": ' + b"[" * depth + b"1" + b"]" * depth + b"}"

    assert extract_fields(nested(MAX_FIELD_DEPTH), ["f"], service_id="s")
    with pytest.raises(ActionError, match="nested too deep"):
        extract_fields(nested(MAX_FIELD_DEPTH + 1), ["f"], service_id="s")


@pytest.mark.parametrize(
    "echo",
    [
        json.dumps(json.dumps({"auth": "Bearer a/b/c/d/e/f/g/h/i/j/k"}))[1:-1],  # \/ and \"
        "".join(f"\\u{ord(c):04x}" for c in "a/b/c/d/e/f/g/h/i/j/k"),
        base64.b64encode(b"Bearer  a/b/c/d/e/f/g/h/i/j/k").decode(),
        base64.b64encode(b"x" + base64.b64encode(b"no")).decode() + "a/b/c/d/e/f/g/h/i/j/k",
    ],
)
def test_escaped_and_offset_forms_of_a_token_with_slashes_are_found(echo: str) -> None:
    assert contains_credential(echo, credential_forms("a/b/c/d/e/f/g/h/i/j/k"))


def test_a_short_token_base64_encoded_at_any_offset_is_found() -> None:
    for prefix in ("", "B", "Be", "Bearer ", "Bearer  "):
        encoded = base64.b64encode(f"{prefix}tok3n".encode()).decode()
        assert contains_credential(f"x {encoded} y", credential_forms("tok3n")), prefix


def test_the_echo_search_costs_the_same_for_a_long_credential() -> None:
    """Linear in the answer, not in answer x credential length: a ratio in one run."""
    import random
    import string
    import time

    rng = random.Random(7)
    text = "".join(rng.choice(string.ascii_letters + " /+=%&:.") for _ in range(1 << 18))

    def cost(token: str) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            assert not contains_credential(text, credential_forms(token))
            best = min(best, time.perf_counter() - started)
        return best

    short = cost("Q9" * 8)
    long = cost("".join(rng.choice("0123456789") for _ in range(2048)))
    assert long < 3 * short + 0.05, (short, long)


def test_a_lone_surrogate_is_refused_as_an_argument_not_crashed_on() -> None:
    spec = {"v": ParamSpec(pattern="(?s).*")}
    with pytest.raises(ArgumentRejected, match="not valid Unicode"):
        validate_args(spec, {"v": "a\ud800b"})


@pytest.mark.parametrize(
    "header", ["Transfer-Encoding", "content-length", "Connection", "Expect", "Accept-Encoding"]
)
def test_a_policy_may_not_declare_a_header_that_changes_the_framing(header: str) -> None:
    from pydantic import ValidationError

    from safeport.shared.schemas.config import HttpOperation

    with pytest.raises(ValidationError, match="set by the gateway"):
        HttpOperation.model_validate({"method": "POST", "path": "/x", "headers": {header: "x"}})
