"""Rung 4's product: a proposal resolved against the accepted policy and prepared.

The names the agent sent must be in the policy, every argument valid, and the action buildable
— all before the vault, a card or the network is touched.
Each failure is a :class:`Refusal` with a fixed sentence; the agent's raw values never appear.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from safeport.action_gateway.approvals.cards import ActionRequest
from safeport.action_gateway.executors.interface import (
    ActionError,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.action_gateway.executors.prepare import prepare_http, prepare_sql, prepare_ssh
from safeport.action_gateway.ladder.refusal import Refusal, Rung
from safeport.action_gateway.policy.arguments import ArgumentRejected, validate_args
from safeport.action_gateway.policy.store import ServedPolicy
from safeport.shared.audit import JournalBody
from safeport.shared.schemas.config import (
    Approval,
    Credential,
    GatewayPolicy,
    approval_of,
)
from safeport.shared.schemas.config_params import ParamSpec
from safeport.shared.schemas.config_sources import LOCAL_SOURCE
from safeport.shared.schemas.wire import ProposeHttp, ProposeSql, ProposeSsh

Proposal = ProposeSsh | ProposeHttp | ProposeSql
Prepared = SshAction | HttpAction | SqlAction


@dataclass(frozen=True)
class Resolved:
    """A proposal resolved against the accepted policy and prepared (rung 4's product)."""

    request: ActionRequest
    max_output_bytes: int
    policy: GatewayPolicy  # the accepted policy it was resolved against (its credential's source)

    @property
    def action(self) -> Prepared:
        return self.request.prepared


_T = TypeVar("_T")


def _declared(table: Mapping[str, _T], name: str, missing: str) -> _T:
    """The entry the accepted policy declares under ``name``, or the refusal that it does not."""
    found = table.get(name)
    if found is None:
        raise Refusal("denied", Rung.ACTION, "unknown_action", missing)
    return found


@dataclass(frozen=True)
class _Found:
    """What one kind's step finds for a proposal: the prepared action and the policy's facts
    about it that every kind's request carries."""

    prepared: Prepared
    args: dict[str, str | int]
    credential_id: str
    read_only: bool
    cap: int
    scope: Approval


def resolve(proposal: Proposal, served: ServedPolicy) -> Resolved:
    """Rung 4's resolution: one step for the proposal's kind (names declared, arguments valid,
    the action prepared), then the request every kind makes of what that step found."""
    policy = served.policy
    if isinstance(proposal, ProposeSql):
        found = _sql(proposal, policy)
    elif isinstance(proposal, ProposeSsh):
        found = _ssh(proposal, policy)
    else:
        found = _http(proposal, policy)
    credential_id = found.credential_id
    _, target_id, operation_id = proposal_target(proposal)
    request = ActionRequest(
        request_id=proposal.id,
        kind=proposal.action,
        target_id=target_id,
        operation_id=operation_id,
        credential=credential_id,
        scope=found.scope,
        session_covers=_session_covers(served, credential_id) if found.scope == "session" else (),
        args=found.args,
        policy_digest=served.digest,
        read_only=found.read_only,
        prepared=found.prepared,
        credential_origin=credential_origin(policy.credentials[credential_id]),
    )
    return Resolved(request, found.cap, policy)


def _sql(proposal: ProposeSql, policy: GatewayPolicy) -> _Found:
    """The declared query of the declared database, its parameters valid, the statement built."""
    database = _declared(
        policy.sql.databases, proposal.database, "no such sql database in the accepted policy"
    )
    query = _declared(database.queries, proposal.query, "no such query for this database")
    args = _validate(query.params, proposal.params, ())
    with _unpreparable():
        prepared = prepare_sql(proposal.database, database, proposal.query, query, args)
    scope = approval_of(policy.credentials[database.credential], query)
    return _Found(prepared, args, database.credential, True, query.max_bytes, scope)


def _ssh(proposal: ProposeSsh, policy: GatewayPolicy) -> _Found:
    """The declared command of the declared host, its arguments valid, the one line rendered."""
    host = _declared(policy.ssh.hosts, proposal.host_id, "no such ssh host in the accepted policy")
    command = _declared(host.commands, proposal.command_id, "no such command for this host")
    args = _validate(command.params, proposal.args, command.allow_leading_dash)
    with _unpreparable():
        prepared = prepare_ssh(proposal.host_id, host, proposal.command_id, command, args)
    scope = approval_of(policy.credentials[host.credential], command)
    return _Found(
        prepared, args, host.credential, command.read_only, command.max_output_bytes, scope
    )


def _http(proposal: ProposeHttp, policy: GatewayPolicy) -> _Found:
    """The declared operation of the declared service, its arguments valid, the request built."""
    service = _declared(
        policy.http.services, proposal.service_id, "no such http service in the accepted policy"
    )
    operation = _declared(
        service.operations, proposal.operation_id, "no such operation for this service"
    )
    args = _validate(operation.params, proposal.args, ())
    with _unpreparable():
        prepared = prepare_http(
            proposal.service_id, service, proposal.operation_id, operation, args
        )
    scope = approval_of(policy.credentials[service.credential], operation)
    return _Found(
        prepared, args, service.credential, operation.read_only, service.max_response_bytes, scope
    )


def credential_origin(credential: Credential) -> str:
    """Where the card says the credential comes from ("" for the local vault)."""
    if credential.source == LOCAL_SOURCE:
        return ""
    if credential.database_role is not None:
        return (
            f"OpenBao {credential.source}: a role issued by {credential.database_mount}/creds/"
            f"{credential.database_role} for this query, its lease revoked right after"
        )
    if credential.kind == "ssh-key":
        return (
            f"OpenBao {credential.source}: a new key signed by {credential.ssh_mount}/sign/"
            f"{credential.ssh_role}, valid {credential.ttl_s} s"
        )
    return (
        f"OpenBao {credential.source}: {credential.kv_mount}/{credential.kv_path} field "
        f"{credential.kv_field} (read for this call only)"
    )


def _session_covers(served: ServedPolicy, credential_id: str) -> tuple[str, ...]:
    """:func:`session_covers` of the served policy, worked out once per policy and credential
    (it walks every declared action: a cost per proposal that grew with the policy)."""
    covers = served.session_covers.get(credential_id)
    if covers is None:
        covers = served.session_covers.setdefault(
            credential_id, session_covers(served.policy, credential_id)
        )
    return covers


def session_covers(policy: GatewayPolicy, credential_id: str) -> tuple[str, ...]:
    """Every action one session card for ``credential_id`` covers, as `target.operation`: a
    session grant is bound to the credential, so the human is told all it lets run unasked."""
    credential = policy.credentials[credential_id]
    covered = [
        f"{host_id}.{command_id}"
        for host_id, host in sorted(policy.ssh.hosts.items())
        if host.credential == credential_id
        for command_id, command in sorted(host.commands.items())
        if approval_of(credential, command) == "session"
    ]
    covered += [
        f"{service_id}.{operation_id}"
        for service_id, service in sorted(policy.http.services.items())
        if service.credential == credential_id
        for operation_id, operation in sorted(service.operations.items())
        if approval_of(credential, operation) == "session"
    ]
    covered += [
        f"{database_id}.{query_id}"
        for database_id, database in sorted(policy.sql.databases.items())
        if database.credential == credential_id
        for query_id, query in sorted(database.queries.items())
        if approval_of(credential, query) == "session"
    ]
    return tuple(covered)


def proposal_target(proposal: Proposal) -> tuple[str, str, str]:
    """Kind, target and operation names as the agent sent them (schema-valid identifiers)."""
    if isinstance(proposal, ProposeSsh):
        return "ssh", proposal.host_id, proposal.command_id
    if isinstance(proposal, ProposeSql):
        return "sql", proposal.database, proposal.query
    return "http", proposal.service_id, proposal.operation_id


def proposal_names(proposal: Proposal) -> JournalBody:
    """Names only (schema-valid identifiers); argument values are never journaled."""
    _, target, operation = proposal_target(proposal)
    return {
        "action": proposal.action,
        "target": target,
        "operation": operation,
        "arg_names": sorted(proposal.params if isinstance(proposal, ProposeSql) else proposal.args)[
            :32
        ],
    }


@contextlib.contextmanager
def _unpreparable() -> Iterator[None]:
    """An action that cannot be built safely is refused here, before any card or connection."""
    try:
        yield
    except ActionError as exc:
        raise Refusal("denied", Rung.ACTION, f"prepare_{exc.failure}", exc.message) from exc


def _validate(
    params: Mapping[str, ParamSpec], args: dict[str, str | int], allow_leading_dash: Collection[str]
) -> dict[str, str | int]:
    try:
        return validate_args(params, args, allow_leading_dash=allow_leading_dash)
    except ArgumentRejected as exc:
        raise Refusal("denied", Rung.ACTION, "argument", exc.message) from exc
