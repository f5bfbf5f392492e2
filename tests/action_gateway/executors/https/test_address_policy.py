"""Which resolved addresses a credentialed request may reach."""

from __future__ import annotations

import ipaddress

import pytest

from safeport.action_gateway.executors.https.address_policy import check_addresses, classify

ALWAYS_REFUSED = [
    "169.254.169.254",
    "169.254.0.1",
    "fe80::1",
    "fd00:ec2::254",
    "100.100.100.200",
    "0.0.0.0",
    "::",
    "224.0.0.1",
    "ff02::1",
    "255.255.255.255",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",  # NAT64 form of 169.254.169.254
    "2002:a9fe:a9fe::1",  # 6to4 form of 169.254.169.254
]
PRIVATE = [
    "127.0.0.1",
    "127.8.9.10",
    "::1",
    "10.0.0.5",
    "172.16.3.4",
    "192.168.1.1",
    "100.64.0.1",
    "fd12:3456::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
]
PUBLIC = ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "8.8.8.8"]


@pytest.mark.parametrize("address", ALWAYS_REFUSED)
def test_link_local_metadata_and_special_addresses_are_refused_even_when_private_is_allowed(
    address: str,
) -> None:
    allowed, refusal = check_addresses([ipaddress.ip_address(address)], allow_private=True)
    assert allowed == []
    assert refusal is not None and refusal.verdict == "refused"


@pytest.mark.parametrize("address", PRIVATE)
def test_private_and_loopback_addresses_need_the_service_to_allow_them(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert classify(ip).verdict == "private"
    assert check_addresses([ip], allow_private=False)[1] is not None
    assert check_addresses([ip], allow_private=True) == ([ip], None)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert check_addresses([ip], allow_private=False) == ([ip], None)


def test_one_forbidden_answer_among_good_ones_refuses_the_whole_name() -> None:
    answers = [ipaddress.ip_address(a) for a in ("93.184.216.34", "169.254.169.254")]
    allowed, refusal = check_addresses(answers, allow_private=True)
    assert allowed == []
    assert refusal is not None and "metadata" in refusal.reason
