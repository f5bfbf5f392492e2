"""What the gateway checks of a declared host or service before it shows a card, in one place.

The ladder runs :func:`check_before_card` on every prepared action (through the executor, whose
resolver it uses) and `sp policy check` runs :func:`policy_target_problems` over the whole
policy: both call the same checks, so the check passes only what the gateway would let a human
approve, and a refusal the human could only have met after saying yes is met before the card.

- an HTTPS service's ``base_url`` names its host by a plain DNS name (never an IP literal, a
  trailing dot or a look-alike label: :func:`~.https.target.service_origin`);
- every address that name resolves to *now* passes the address policy, loopback and private
  ones only with ``allow_private_addresses = true`` (:mod:`~.https.address_policy`);
- a ``ca_file`` is a file only root (or the gateway's account) controls, and a ``ca_file`` or
  ``ca_pem`` holds certificates a TLS context loads (:mod:`~.https.tls`);
- an SSH host's address is a plain name or IP address (SSH hosts have no address policy: a
  staging box on the local network is the common case).

The executor still checks addresses at connect time, on the one lookup it connects with: DNS
can change between the card and the call, and that check stays the guard.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from safeport.action_gateway.executors.https.address_policy import AddressVerdict, check_addresses
from safeport.action_gateway.executors.https.pinned_network import Resolver, system_resolver
from safeport.action_gateway.executors.https.target import service_origin
from safeport.action_gateway.executors.https.tls import tls_context
from safeport.action_gateway.executors.https.trust_files import (
    UntrustedFile,
    check_trust_file,
    trusted_owners,
)
from safeport.action_gateway.executors.interface import (
    ActionError,
    ActionFailure,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.action_gateway.executors.ssh.transport import is_plain_address
from safeport.shared.schemas.config import GatewayPolicy, HttpService, SqlDatabase, SshHost

Severity = Literal["problem", "note"]


@dataclass(frozen=True)
class TargetProblem:
    """One thing the gateway would refuse before a card (``problem``), or could not judge from
    here now (``note``: a name that does not resolve); ``key`` is the policy key that decides."""

    table: str  # the TOML table that holds ``key``: ``http.services.api``
    key: str
    message: str
    fix: str
    severity: Severity = "problem"


def check_before_card(
    action: SshAction | HttpAction | SqlAction, resolver: Resolver, trust_owners: frozenset[int]
) -> None:
    """Raise the :class:`ActionError` the executor would meet after approval, before any card."""
    if isinstance(action, SqlAction):
        for problem in _database_problems(action.database_id, action.database):
            raise ActionError("tls_failed", problem.message, hint=problem.fix)
        return
    if isinstance(action, SshAction):
        for problem in _host_problems(action.host_id, action.host):
            raise ActionError("invalid_target", problem.message)
        return
    for problem in _service_problems(action.service_id, action.service, resolver, trust_owners):
        # A name that does not resolve now is a note for `sp policy check` (it may resolve
        # where the gateway runs), but the gateway's own lookup is the one that counts.
        failure = _FAILURES[problem.key] if problem.severity == "problem" else "unreachable"
        raise ActionError(failure, problem.message, hint=problem.fix)


def policy_target_problems(
    policy: GatewayPolicy,
    *,
    served_uids: frozenset[int],
    gateway_uid: int,
    resolver: Resolver = system_resolver,
) -> list[TargetProblem]:
    """Every host and service of ``policy`` put through the checks of :func:`check_before_card`,
    judging trust files as the gateway running as ``gateway_uid`` and serving ``served_uids``
    would."""
    trust_owners = trusted_owners(served_uids, gateway_uid)
    found: list[TargetProblem] = []
    for host_id, host in sorted(policy.ssh.hosts.items()):
        found += _host_problems(host_id, host)
    for service_id, service in sorted(policy.http.services.items()):
        found += _service_problems(service_id, service, resolver, trust_owners)
    for database_id, database in sorted(policy.sql.databases.items()):
        found += _database_problems(database_id, database)
        # Only the gateway holds the credential, and it logs in only for a policy the human
        # accepts (with the passphrase): never for a file any process of the user could edit.
        found.append(
            TargetProblem(
                f"sql.databases.{database_id}",
                "user",
                f"sql database {database_id!r}: its role is inspected when you accept (the "
                "gateway logs in and refuses a superuser, a server-file role or write privileges)",
                "",
                severity="note",
            )
        )
    return found


_FAILURES: dict[str, ActionFailure] = {
    "base_url": "invalid_target",
    "allow_private_addresses": "address_refused",
    "address": "address_refused",
    "ca_file": "tls_failed",
    "ca_pem": "tls_failed",
}


def _host_problems(host_id: str, host: SshHost) -> Iterator[TargetProblem]:
    if not is_plain_address(host.address):
        yield TargetProblem(
            f"ssh.hosts.{host_id}",
            "address",
            f"ssh host {host_id!r} has an address that is not plain",
            "give a host name or an IP address, nothing else (no `user@`, spaces or options)",
        )


def _database_problems(database_id: str, database: SqlDatabase) -> Iterator[TargetProblem]:
    for key in ("ca_pem", "client_cert_pem"):
        pem = getattr(database, key)
        if pem is not None and not _loads_as_pem(pem):
            yield TargetProblem(
                f"sql.databases.{database_id}",
                key,
                f"sql database {database_id!r}: its {key} cannot be read as PEM certificates",
                f"put the PEM certificate(s) in `{key}`",
            )


@functools.lru_cache(maxsize=64)
def _loads_as_pem(pem: str) -> bool:
    """Whether a TLS context loads ``pem`` (the text is the accepted policy's, so the answer is
    kept: loading a CA costs more than the rest of a query's checks)."""
    try:
        tls_context("sql", None, pem)
    except ActionError:
        return False
    return True


def _service_problems(
    service_id: str, service: HttpService, resolver: Resolver, owners: frozenset[int]
) -> Iterator[TargetProblem]:
    table = f"http.services.{service_id}"
    try:
        origin = service_origin(service.base_url)
    except ActionError as exc:
        yield TargetProblem(
            table,
            "base_url",
            f"http service {service_id!r}: {exc.message}",
            "name the service's host by its DNS name, as its certificate does",
        )
        return
    yield from _trust_problems(service_id, service, table, owners)
    yield from _address_problems(service_id, service, table, origin.host, origin.port, resolver)


def _trust_problems(
    service_id: str, service: HttpService, table: str, owners: frozenset[int]
) -> Iterator[TargetProblem]:
    if service.ca_file is not None:
        try:
            check_trust_file(service.ca_file, owners)
        except UntrustedFile:
            yield TargetProblem(
                table,
                "ca_file",
                f"http service {service_id!r}: its ca_file is not a file only root or the "
                "gateway's account controls",
                "paste the CA into `ca_pem` instead (bound by the policy you accept), or keep "
                "the file where only root can change it, e.g. /usr/local/share/ca-certificates",
            )
            return
    if service.ca_file is None and service.ca_pem is None:
        return
    try:
        tls_context(service_id, service.ca_file, service.ca_pem)
    except ActionError:
        key = "ca_file" if service.ca_file is not None else "ca_pem"
        yield TargetProblem(
            table,
            key,
            f"http service {service_id!r}: its {key} cannot be read as PEM certificates",
            f"put the service's CA certificate(s), PEM-encoded, in `{key}`",
        )


def _address_problems(
    service_id: str,
    service: HttpService,
    table: str,
    host: str,
    port: int,
    resolver: Resolver,
) -> Iterator[TargetProblem]:
    try:
        addresses = [ipaddress.ip_address(answer) for answer in resolver(host, port)]
    except (OSError, ValueError):
        addresses = []
    if not addresses:
        yield TargetProblem(
            table,
            "base_url",
            f"http service {service_id!r}: the name {host} does not resolve now",
            "check the name in `base_url`, and that this machine's DNS reaches it",
            severity="note",
        )
        return
    _, refusal = check_addresses(addresses, allow_private=service.allow_private_addresses)
    if refusal is not None:
        yield _address_refusal(service_id, table, host, refusal)


def _address_refusal(
    service_id: str, table: str, host: str, refusal: AddressVerdict
) -> TargetProblem:
    said = (
        f"http service {service_id!r}: {host} resolves now to {refusal.address}, {refusal.reason}"
    )
    if refusal.verdict == "private":
        return TargetProblem(
            table,
            "allow_private_addresses",
            f"{said}, which it may reach only with `allow_private_addresses = true`",
            f"set `allow_private_addresses = true` under [{table}] if the service really lives "
            "on a private network (or on this machine)",
        )
    return TargetProblem(
        table,
        "address",
        f"{said}, which no service may reach",
        "no key allows this address: check the name in `base_url` and the DNS answering for it",
    )
