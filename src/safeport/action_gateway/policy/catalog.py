"""The catalog an agent sees, built from the accepted policy, and the reply cap it implies.

Names, descriptions, param schemas and approval scope; never an address, a user,
a URL or a credential's name.
"""

from __future__ import annotations

from safeport.shared.schemas.catalog import (
    Catalog,
    CatalogEntry,
    HttpCatalogEntry,
    IntegerParam,
    ParamSchema,
    SqlCatalogEntry,
    SshCatalogEntry,
    StringParam,
)
from safeport.shared.schemas.config import GatewayPolicy, approval_of
from safeport.shared.schemas.config_params import ParamSpec
from safeport.shared.wire import MAX_REPLY_BYTES


def catalog_of(policy: GatewayPolicy, digest: str) -> Catalog:
    actions: list[CatalogEntry] = []
    for host_id, host in sorted(policy.ssh.hosts.items()):
        credential = policy.credentials[host.credential]
        for command_id, command in sorted(host.commands.items()):
            actions.append(
                SshCatalogEntry(
                    host_id=host_id,
                    command_id=command_id,
                    description=command.description,
                    read_only=command.read_only,
                    approval=approval_of(credential, command),
                    params={name: param_schema(spec) for name, spec in command.params.items()},
                )
            )
    for service_id, service in sorted(policy.http.services.items()):
        credential = policy.credentials[service.credential]
        for operation_id, operation in sorted(service.operations.items()):
            actions.append(
                HttpCatalogEntry(
                    service_id=service_id,
                    operation_id=operation_id,
                    method=operation.method,
                    description=operation.description,
                    read_only=operation.read_only,
                    approval=approval_of(credential, operation),
                    params={name: param_schema(spec) for name, spec in operation.params.items()},
                )
            )
    for database_id, database in sorted(policy.sql.databases.items()):
        credential = policy.credentials[database.credential]
        for query_id, query in sorted(database.queries.items()):
            actions.append(
                SqlCatalogEntry(
                    database=database_id,
                    query=query_id,
                    description=query.description,
                    read_only=query.read_only,
                    approval=approval_of(credential, query),
                    params={name: param_schema(spec) for name, spec in query.params.items()},
                    columns=query.columns,
                )
            )
    return Catalog(policy=digest, actions=actions)


def param_schema(spec: ParamSpec) -> ParamSchema:
    """A JSON Schema fragment for one param."""
    if spec.type == "int":
        return IntegerParam(minimum=spec.min, maximum=spec.max)
    return StringParam(max_length=spec.max_length, enum=spec.enum, pattern=spec.pattern)


def reply_cap(policy: GatewayPolicy) -> int:
    """The largest reply the policy's output limits allow, JSON escaping included.

    Results are already cut to those limits on rung 9; this is the backstop on the wire.
    """
    # A byte of output can become up to 6 characters of JSON (\u00XX); stdout + stderr.
    outputs = [
        2 * command.max_output_bytes
        for host in policy.ssh.hosts.values()
        for command in host.commands.values()
    ]
    outputs += [service.max_response_bytes for service in policy.http.services.values()]
    # A query's max_bytes counts each value with its JSON punctuation (see sql/query.py).
    outputs += [q.max_bytes for db in policy.sql.databases.values() for q in db.queries.values()]
    return min(MAX_REPLY_BYTES, 6 * max(outputs, default=0) + 64 * 1024)
