"""The boundary inventory `sp policy check` prints: everything the agent could ask for (pure).

`sp policy check --json` prints the models' dump: the field names are that output's keys.
"""

from __future__ import annotations

import shlex
from urllib.parse import urlencode

from pydantic import BaseModel, ConfigDict

from safeport.action_gateway.policy.authorized_keys import advise
from safeport.action_gateway.policy.caller_rules import describe_default
from safeport.shared.schemas.config import (
    Approval,
    GatewayPolicy,
    GatewaySettings,
    HttpOperation,
    HttpService,
    SshHost,
    approval_of,
)


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True)


class CredentialEntry(_Entry):
    id: str
    kind: str
    approval: Approval
    rate_per_minute: int | None


class AuthorizedKeysAdvice(_Entry):
    line: str
    notes: list[str]


class CommandEntry(_Entry):
    id: str
    argv: str
    read_only: bool
    approval: Approval
    params: list[str]


class SshHostEntry(_Entry):
    authorized_keys: AuthorizedKeysAdvice
    id: str
    address: str
    credential: str
    pinned_keys: int
    commands: list[CommandEntry]


class OperationEntry(_Entry):
    id: str
    request: str
    read_only: bool
    approval: Approval
    response_fields: list[str]
    params: list[str]


class HttpServiceEntry(_Entry):
    id: str
    base_url: str
    credential: str
    auth: str
    private_addresses: bool
    operations: list[OperationEntry]


class Inventory(_Entry):
    digest: str
    callers: str
    settings: GatewaySettings
    credentials: list[CredentialEntry]
    ssh_hosts: list[SshHostEntry]
    http_services: list[HttpServiceEntry]


def inventory(policy: GatewayPolicy, digest: str) -> Inventory:
    hosts = [_ssh_host(policy, host_id, host) for host_id, host in sorted(policy.ssh.hosts.items())]
    services = [
        _http_service(policy, service_id, service)
        for service_id, service in sorted(policy.http.services.items())
    ]
    credentials = [
        CredentialEntry(
            id=name, kind=cred.kind, approval=cred.approval, rate_per_minute=cred.rate_per_minute
        )
        for name, cred in sorted(policy.credentials.items())
    ]
    return Inventory(
        digest=digest,
        callers=describe_default(policy.callers),
        settings=policy.gateway,
        credentials=credentials,
        ssh_hosts=hosts,
        http_services=services,
    )


def _ssh_host(policy: GatewayPolicy, host_id: str, host: SshHost) -> SshHostEntry:
    """A host, its commands with the approval each gets, and the authorized_keys line advised."""
    advice = advise(host_id, host)
    return SshHostEntry(
        authorized_keys=AuthorizedKeysAdvice(line=advice.line(), notes=list(advice.notes)),
        id=host_id,
        address=f"{host.user}@{host.address}:{host.port}",
        credential=host.credential,
        pinned_keys=len(host.host_keys),
        commands=[
            CommandEntry(
                id=command_id,
                argv=shlex.join(command.argv),
                read_only=command.read_only,
                approval=approval_of(policy.credentials[host.credential], command),
                params=sorted(command.params),
            )
            for command_id, command in sorted(host.commands.items())
        ],
    )


def _http_service(policy: GatewayPolicy, service_id: str, service: HttpService) -> HttpServiceEntry:
    """A service and its operations: each request's template, approval and returned fields."""
    return HttpServiceEntry(
        id=service_id,
        base_url=service.base_url,
        credential=service.credential,
        auth=service.auth,
        private_addresses=service.allow_private_addresses,
        operations=[
            OperationEntry(
                id=operation_id,
                request=_request_template(service, operation),
                read_only=operation.read_only,
                approval=approval_of(policy.credentials[service.credential], operation),
                response_fields=list(operation.response_fields),
                params=sorted(operation.params),
            )
            for operation_id, operation in sorted(service.operations.items())
        ],
    )


def inventory_lines(data: Inventory) -> list[str]:
    """The inventory as text lines (the CLI escapes and prints them)."""
    lines = [f"policy digest: {data.digest}", data.callers]
    settings = data.settings.model_dump()
    lines.append(
        "settings: " + ", ".join(f"{key} = {value}" for key, value in sorted(settings.items()))
    )
    for cred in data.credentials:
        rate = f", at most {cred.rate_per_minute}/min" if cred.rate_per_minute else ""
        lines.append(f"credential {cred.id}: {cred.kind}, approval {cred.approval}{rate}")
    for host in data.ssh_hosts:
        lines.append(
            f"ssh host {host.id}: {host.address} with {host.credential}, "
            f"{host.pinned_keys} pinned key(s)"
        )
        for command in host.commands:
            mode = "read-only" if command.read_only else "may change things"
            lines.append(f"  command {command.id}: {command.argv} ({mode}; {_approved(command)})")
        lines.append(f"  authorized_keys on the server: {host.authorized_keys.line}")
        lines.extend(f"    {note}" for note in host.authorized_keys.notes)
    for service in data.http_services:
        private = ", private addresses allowed" if service.private_addresses else ""
        lines.append(
            f"https service {service.id}: {service.base_url} with {service.credential} "
            f"({service.auth}{private})"
        )
        for operation in service.operations:
            mode = "read-only" if operation.read_only else "may change things"
            fields = ", ".join(operation.response_fields) or "none"
            lines.append(
                f"  operation {operation.id}: {operation.request} "
                f"({mode}; {_approved(operation)}; returns {fields})"
            )
    return lines


def _approved(action: CommandEntry | OperationEntry) -> str:
    return "approved once per session" if action.approval == "session" else "approved per call"


def _request_template(service: HttpService, operation: HttpOperation) -> str:
    """The declared request with its ``{param}`` placeholders (what a card fills in)."""
    url = service.base_url.rstrip("/") + operation.path
    if operation.query:
        url += "?" + urlencode(operation.query)
    return f"{operation.method} {url}"
