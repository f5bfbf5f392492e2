"""The boundary inventory `sp policy check` prints: everything the agent could ask for (pure)."""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import urlencode

from safeport.action_gateway.policy.authorized_keys import advise
from safeport.action_gateway.policy.caller_rules import describe_default
from safeport.shared.schemas.config import (
    GatewayPolicy,
    HttpOperation,
    HttpService,
    SshHost,
    approval_of,
)


def inventory(policy: GatewayPolicy, digest: str) -> dict[str, object]:
    hosts = [_ssh_host(policy, host_id, host) for host_id, host in sorted(policy.ssh.hosts.items())]
    services = [
        _http_service(policy, service_id, service)
        for service_id, service in sorted(policy.http.services.items())
    ]
    credentials = [
        {
            "id": name,
            "kind": cred.kind,
            "approval": cred.approval,
            "rate_per_minute": cred.rate_per_minute,
        }
        for name, cred in sorted(policy.credentials.items())
    ]
    settings = policy.gateway
    return {
        "digest": digest,
        "callers": describe_default(policy.callers),
        "settings": settings.model_dump(),
        "credentials": credentials,
        "ssh_hosts": hosts,
        "http_services": services,
    }


def _ssh_host(policy: GatewayPolicy, host_id: str, host: SshHost) -> dict[str, object]:
    """A host, its commands with the approval each gets, and the authorized_keys line advised."""
    advice = advise(host_id, host)
    return {
        "authorized_keys": {"line": advice.line(), "notes": list(advice.notes)},
        "id": host_id,
        "address": f"{host.user}@{host.address}:{host.port}",
        "credential": host.credential,
        "pinned_keys": len(host.host_keys),
        "commands": [
            {
                "id": command_id,
                "argv": shlex.join(command.argv),
                "read_only": command.read_only,
                "approval": approval_of(policy.credentials[host.credential], command),
                "params": sorted(command.params),
            }
            for command_id, command in sorted(host.commands.items())
        ],
    }


def _http_service(
    policy: GatewayPolicy, service_id: str, service: HttpService
) -> dict[str, object]:
    """A service and its operations: each request's template, approval and returned fields."""
    return {
        "id": service_id,
        "base_url": service.base_url,
        "credential": service.credential,
        "auth": service.auth,
        "private_addresses": service.allow_private_addresses,
        "operations": [
            {
                "id": operation_id,
                "request": _request_template(service, operation),
                "read_only": operation.read_only,
                "approval": approval_of(policy.credentials[service.credential], operation),
                "response_fields": list(operation.response_fields),
                "params": sorted(operation.params),
            }
            for operation_id, operation in sorted(service.operations.items())
        ],
    }


def inventory_lines(data: dict[str, object]) -> list[str]:
    """The inventory as text lines (the CLI escapes and prints them)."""
    lines = [f"policy digest: {data['digest']}", str(data["callers"])]
    settings = data["settings"]
    assert isinstance(settings, dict)
    lines.append(
        "settings: " + ", ".join(f"{key} = {value}" for key, value in sorted(settings.items()))
    )
    for cred in _items(data, "credentials"):
        rate = f", at most {cred['rate_per_minute']}/min" if cred["rate_per_minute"] else ""
        lines.append(f"credential {cred['id']}: {cred['kind']}, approval {cred['approval']}{rate}")
    for host in _items(data, "ssh_hosts"):
        lines.append(
            f"ssh host {host['id']}: {host['address']} with {host['credential']}, "
            f"{host['pinned_keys']} pinned key(s)"
        )
        for command in host["commands"]:
            mode = "read-only" if command["read_only"] else "may change things"
            lines.append(
                f"  command {command['id']}: {command['argv']} ({mode}; {_approved(command)})"
            )
        lines.append(f"  authorized_keys on the server: {host['authorized_keys']['line']}")
        lines.extend(f"    {note}" for note in host["authorized_keys"]["notes"])
    for service in _items(data, "http_services"):
        private = ", private addresses allowed" if service["private_addresses"] else ""
        lines.append(
            f"https service {service['id']}: {service['base_url']} with {service['credential']} "
            f"({service['auth']}{private})"
        )
        for operation in service["operations"]:
            mode = "read-only" if operation["read_only"] else "may change things"
            fields = ", ".join(operation["response_fields"]) or "none"
            lines.append(
                f"  operation {operation['id']}: {operation['request']} "
                f"({mode}; {_approved(operation)}; returns {fields})"
            )
    return lines


def _approved(action: dict[str, Any]) -> str:
    return "approved once per session" if action["approval"] == "session" else "approved per call"


def _items(data: dict[str, object], key: str) -> list[dict[str, Any]]:
    value = data[key]
    assert isinstance(value, list)
    return value


def _request_template(service: HttpService, operation: HttpOperation) -> str:
    """The declared request with its ``{param}`` placeholders (what a card fills in)."""
    url = service.base_url.rstrip("/") + operation.path
    if operation.query:
        url += "?" + urlencode(operation.query)
    return f"{operation.method} {url}"
