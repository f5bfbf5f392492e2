"""Which resolved addresses an HTTPS service may connect to (pure).

A credentialed request must never be steered at the machine's own neighbourhood: the cloud
metadata endpoint hands out instance credentials, link-local addresses reach it and its kin, and
private or loopback addresses reach services that trust the network they sit on. So link-local,
metadata, multicast, unspecified and broadcast addresses are always refused; private, loopback,
shared (CGNAT) and any other non-global address only when the service says
``allow_private_addresses = true``.
IPv6 forms that embed an IPv4 address (mapped, translated, compatible, NAT64 with the well-known
or a local-use prefix, 6to4, Teredo) are judged by that address too, so
``::ffff:169.254.169.254`` or ``64:ff9b:1::a9fe:a9fe`` is as refused as ``169.254.169.254``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Verdict = Literal["public", "private", "refused"]

# Metadata services that are not link-local (Alibaba, Oracle) or are IPv6 (AWS).
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "100.100.100.200", "192.0.0.192", "fd00:ec2::254")
)
# Prefixes whose last 32 bits are an IPv4 address a gateway or stack may deliver to: NAT64's
# well-known and local-use prefixes (RFC 6052, RFC 8215; a local-use /96 is the common layout),
# IPv4-translated (RFC 2765) and the deprecated IPv4-compatible form (``::/96``).
_EMBEDDING_V4 = tuple(
    ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::ffff:0:0:0/96", "::/96")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")


@dataclass(frozen=True)
class AddressVerdict:
    address: IpAddress
    verdict: Verdict
    reason: str


def classify(address: IpAddress) -> AddressVerdict:
    """Judge one address, including any IPv4 address embedded in an IPv6 one."""
    verdicts = [_classify_one(a) for a in _with_embedded(address)]
    worst = max(verdicts, key=lambda v: _RANK[v[0]])
    return AddressVerdict(address, worst[0], worst[1])


def check_addresses(
    addresses: Iterable[IpAddress], *, allow_private: bool
) -> tuple[list[IpAddress], AddressVerdict | None]:
    """Return the addresses to try, or the first refusal.

    Every address a name resolves to must pass: a resolver that mixes one forbidden answer in
    with good ones is hostile, and trying "the good one first" would still hand the choice of
    target to whoever controls the zone.
    """
    allowed: list[IpAddress] = []
    for address in addresses:
        verdict = classify(address)
        if verdict.verdict == "refused" or (verdict.verdict == "private" and not allow_private):
            return [], verdict
        allowed.append(address)
    return allowed, None


_RANK = {"public": 0, "private": 1, "refused": 2}


def _with_embedded(address: IpAddress) -> list[IpAddress]:
    found: list[IpAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        if address.sixtofour is not None:
            found.append(address.sixtofour)
        if address.teredo is not None:
            found.extend(address.teredo)
        if any(address in network for network in _EMBEDDING_V4):
            found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def _classify_one(address: IpAddress) -> tuple[Verdict, str]:
    if address in _METADATA:
        return "refused", "a cloud metadata address"
    if address.is_link_local:
        return "refused", "a link-local address"
    if address.is_unspecified:
        return "refused", "the unspecified address"
    if address.is_multicast:
        return "refused", "a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address == ipaddress.IPv4Address(
        "255.255.255.255"
    ):
        return "refused", "the broadcast address"
    if address.is_loopback:
        return "private", "a loopback address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "private", "a shared (carrier-grade NAT) address"
    if address.is_private or address.is_reserved or not address.is_global:
        # is_private covers RFC 1918, ULA, documentation and benchmarking ranges; anything
        # else that is not globally routable (reserved, site-local) is treated the same way.
        return "private", "a private address"
    return "public", "a public address"
