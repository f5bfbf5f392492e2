"""Find a proposed action in the accepted policy (pure).

A name that the policy does not declare is refused here, before any argument is looked at and
before the vault or the network is touched. The refusal names the missing thing only when its
name is plain, so hostile ids are not echoed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from safeport.action_gateway.executors.interface import ActionError, HttpAction, SshAction
from safeport.shared.schemas.config import GatewayPolicy

_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def ssh_action(
    policy: GatewayPolicy, host_id: str, command_id: str, args: Mapping[str, str | int]
) -> SshAction:
    host = policy.ssh.hosts.get(host_id)
    if host is None:
        raise ActionError("invalid_target", f"unknown ssh host {_shown(host_id)}")
    command = host.commands.get(command_id)
    if command is None:
        raise ActionError(
            "invalid_target", f"ssh host {host_id!r} has no command {_shown(command_id)}"
        )
    return SshAction(host_id, host, command_id, command, dict(args))


def http_action(
    policy: GatewayPolicy, service_id: str, operation_id: str, args: Mapping[str, str | int]
) -> HttpAction:
    service = policy.http.services.get(service_id)
    if service is None:
        raise ActionError("invalid_target", f"unknown http service {_shown(service_id)}")
    operation = service.operations.get(operation_id)
    if operation is None:
        raise ActionError(
            "invalid_target", f"http service {service_id!r} has no operation {_shown(operation_id)}"
        )
    return HttpAction(service_id, service, operation_id, operation, dict(args))


def _shown(name: str) -> str:
    return repr(name) if _PLAIN.match(name) else "<not a plain name>"
