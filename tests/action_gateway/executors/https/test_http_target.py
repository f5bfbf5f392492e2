"""URL building and host pinning for HTTPS operations (pure)."""

from __future__ import annotations

import json

import pytest

from safeport.action_gateway.executors.https.target import (
    build_target,
    check_on_origin,
    normalise_host,
    service_origin,
)
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService

ANY = {"pattern": "^.{1,200}$"}


def _service(base_url: str = "https://api.example.com") -> HttpService:
    return HttpService.model_validate({"base_url": base_url, "credential": "token"})


def _operation(**fields: object) -> HttpOperation:
    spec: dict[str, object] = {
        "method": "GET",
        "path": "/v1/{name}/status",
        "params": {"name": ANY},
    }
    spec.update(fields)
    return HttpOperation.model_validate(spec)


def test_a_plain_value_becomes_one_path_segment_on_the_declared_host() -> None:
    target = build_target(_service(), _operation(), {"name": "worker"})
    assert target.url == "https://api.example.com/v1/worker/status"
    assert target.origin.host == "api.example.com"
    assert target.origin.port == 443


@pytest.mark.parametrize(
    ("value", "segment"),
    [
        ("a/b", "a%2Fb"),
        ("a?b=c", "a%3Fb%3Dc"),
        ("a#frag", "a%23frag"),
        ("%2fx%2f", "%252fx%252f"),
        ("x@evil.example", "x%40evil.example"),
        ("a b", "a%20b"),
        ("é", "%C3%A9"),
        ("..x%2F", "..x%252F"),
        ("\\x..\\", "%5Cx..%5C"),
        ("...", "..."),
    ],
)
def test_every_special_character_stays_inside_its_segment(value: str, segment: str) -> None:
    target = build_target(_service(), _operation(), {"name": value})
    assert target.raw_path == f"/v1/{segment}/status"
    assert target.url.startswith("https://api.example.com/v1/")


@pytest.mark.parametrize(
    "value",
    # The last ones read as `..` only to a server that decodes again or splits on `\\`/`;`.
    ["..", ".", "%2f..%2f", "..%2F", "\\..\\", "..;", "%252e%252e"],
)
def test_a_value_that_would_be_a_dot_segment_is_refused(value: str) -> None:
    with pytest.raises(ActionError, match="dot segment"):
        build_target(_service(), _operation(), {"name": value})


def test_a_value_that_fails_its_constraint_is_refused_before_any_url_is_built() -> None:
    operation = _operation(params={"name": {"pattern": "^[a-z]{1,8}$"}})
    with pytest.raises(ActionError, match="does not match its pattern") as caught:
        build_target(_service(), operation, {"name": "../admin"})
    assert caught.value.failure == "invalid_target"


def test_query_parameters_exist_only_where_declared_and_are_encoded() -> None:
    operation = _operation(query={"env": "{env}", "v": "2"}, params={"name": ANY, "env": ANY})
    target = build_target(_service(), operation, {"name": "w", "env": "a&admin=1"})
    assert target.raw_path == "/v1/w/status?env=a%26admin%3D1&v=2"
    undeclared = _operation()
    with pytest.raises(ActionError, match="undeclared argument"):
        build_target(_service(), undeclared, {"name": "w", "admin": "1"})


def test_a_base_path_and_a_port_are_kept() -> None:
    target = build_target(
        _service("https://api.example.com:8443/base/"), _operation(), {"name": "w"}
    )
    assert target.url == "https://api.example.com:8443/base/v1/w/status"


def test_a_json_body_keeps_types_and_substitutes_inside_strings() -> None:
    operation = _operation(
        method="POST",
        json_body={"replicas": "{count}", "note": "deploy {name}", "fixed": [1, True]},
        params={"name": ANY, "count": {"type": "int", "min": 1, "max": 9}},
    )
    target = build_target(_service(), operation, {"name": "w", "count": 3})
    assert target.body is not None
    assert json.loads(target.body) == {"replicas": 3, "note": "deploy w", "fixed": [1, True]}


@pytest.mark.parametrize(
    ("host", "normal"),
    [
        ("API.Example.COM", "api.example.com"),
        ("Bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
    ],
)
def test_hosts_are_compared_after_idna_and_lowercase(host: str, normal: str) -> None:
    assert normalise_host(host) == normal


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("api.example.com.", "trailing dot"),
        ("127.0.0.1", "IP literal"),
        ("[::1]", "IP literal"),
        ("2130706433", "IP literal"),
        ("0x7f.1", "IP literal"),
        ("169.254.169.254", "IP literal"),
        # IDNA maps these to an IP address: fullwidth digits, an ideographic full stop, a
        # zero-width space it drops.
        ("\uff11\uff12\uff17.\uff10.\uff10.\uff11", "IP literal"),
        ("169\u3002254\u3002169\u3002254", "IP literal"),
        ("10.0.0.1\u200b", "IP literal"),
        ("\u0430pi.example.com", "mixes scripts"),  # Cyrillic a + Latin pi
        ("xn--pi-6kc.example.com", "mixes scripts"),  # the same look-alike in punycode
        ("a..b", "not a valid"),
        ("", "empty"),
    ],
)
def test_hosts_that_could_name_another_machine_are_refused(host: str, reason: str) -> None:
    with pytest.raises(ActionError, match=reason):
        normalise_host(host)


@pytest.mark.parametrize(
    ("base_url", "reason"),
    [
        ("https://user:pw@api.example.com", "userinfo"),
        ("https://api.example.com@evil.example", "userinfo"),
        ("https://api.example.com.", "trailing dot"),
        ("https://10.0.0.1", "IP literal"),
        ("https://api.example.com/a/../b", "not plain"),
    ],
)
def test_a_base_url_that_is_not_a_plain_name_is_refused(base_url: str, reason: str) -> None:
    with pytest.raises(ActionError, match=reason):
        service_origin(base_url)


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/v1/w/status",
        "https://api.example.com:444/v1/w/status",
        "https://user@api.example.com/v1/w/status",
        "http://api.example.com/v1/w/status",
        "https://api.example.com/v1/x/../w/status",
    ],
)
def test_a_url_that_leaves_the_origin_or_is_rewritten_is_refused(url: str) -> None:
    origin = service_origin("https://api.example.com")
    with pytest.raises(ActionError):
        check_on_origin(url, origin, expected_raw_path="/v1/x/../w/status")
