"""The checks made before a card, with the resolver the gateway would use injected: the key that
allows an address is named, an address no key allows says so, and a name that does not resolve
is a note for `sp policy check` but a refusal for the gateway."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safeport.action_gateway.executors.https.pinned_network import Resolver
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.preflight import check_before_card, policy_target_problems
from safeport.action_gateway.executors.prepare import prepare_http
from safeport.shared.schemas.config import GatewayPolicy


def _policy(base_url: str = "https://api.example.com", **service: object) -> GatewayPolicy:
    return GatewayPolicy.model_validate(
        {
            "credentials": {"tok": {"kind": "token"}},
            "http": {
                "services": {
                    "api": {
                        "base_url": base_url,
                        "credential": "tok",
                        "operations": {"get": {"method": "GET", "path": "/x"}},
                        **service,
                    }
                }
            },
        }
    )


def _answers(*addresses: str) -> Resolver:
    return lambda host, port: list(addresses)


def _problems(policy: GatewayPolicy, *addresses: str) -> list[tuple[str, str, str]]:
    found = policy_target_problems(
        policy, served_uids=frozenset({1000}), gateway_uid=1000, resolver=_answers(*addresses)
    )
    return [(p.key, p.severity, p.message) for p in found]


def test_a_public_answer_passes_and_a_private_one_names_the_key_that_allows_it() -> None:
    assert _problems(_policy(), "93.184.216.34") == []
    [(key, severity, message)] = _problems(_policy(), "93.184.216.34", "10.1.2.3")
    assert (key, severity) == ("allow_private_addresses", "problem")
    assert "10.1.2.3, a private address" in message
    assert _problems(_policy(allow_private_addresses=True), "10.1.2.3") == []


@pytest.mark.parametrize("address", ["169.254.169.254", "::ffff:169.254.169.254", "224.0.0.1"])
def test_an_address_no_key_allows_is_refused_even_with_private_addresses_allowed(
    address: str,
) -> None:
    [(key, _, message)] = _problems(_policy(allow_private_addresses=True), address)
    assert key == "address" and "which no service may reach" in message


def test_an_unresolved_name_is_a_note_here_and_a_refusal_before_a_card() -> None:
    assert _problems(_policy()) == [
        ("base_url", "note", "http service 'api': the name api.example.com does not resolve now")
    ]
    policy = _policy()
    service = policy.http.services["api"]
    action = prepare_http("api", service, "get", service.operations["get"], {})
    with pytest.raises(ActionError) as refused:
        check_before_card(action, _answers(), frozenset({0}))
    assert refused.value.failure == "unreachable"
    with pytest.raises(ActionError) as private:
        check_before_card(action, _answers("127.0.0.1"), frozenset({0}))
    assert private.value.failure == "address_refused" and private.value.code == "denied"
    assert "allow_private_addresses" in private.value.message
    check_before_card(action, _answers("93.184.216.34"), frozenset({0}))


@pytest.mark.parametrize(
    "base_url",
    ["https://10.0.0.5", "https://[::1]:8443", "https://2130706433", "https://\uff11\uff10.0.0.5"],
)
def test_an_ip_literal_base_url_is_refused_naming_base_url(base_url: str) -> None:
    [(key, severity, message)] = _problems(_policy(base_url), "93.184.216.34")
    assert (key, severity) == ("base_url", "problem") and "IP literal" in message


def test_a_ca_file_the_human_could_swap_or_that_holds_no_certificate_is_refused(
    tmp_path: Path,
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")

    def problems() -> list[str]:
        found = policy_target_problems(
            _policy(ca_file=str(ca)),
            served_uids=frozenset({1000}),
            gateway_uid=1000,  # the gateway runs as the human it serves: only root decides
            resolver=_answers("93.184.216.34"),
        )
        return [f"{p.key}: {p.message}" for p in found]

    assert problems() == [
        "ca_file: http service 'api': its ca_file cannot be read as PEM certificates"
    ]
    os.chown(ca, 1000, 1000)
    assert problems() == [
        "ca_file: http service 'api': its ca_file is not a file only root or the gateway's "
        "account controls"
    ]
