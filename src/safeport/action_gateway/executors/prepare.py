"""Prepare an action once, before approval: the one place a command or a request is rendered.

The ladder calls these after the arguments passed rung 4 and before the vault or a human is
involved. Everything that could refuse the action on its shape (a value that fails its declared
constraint, a command over the length sshd accepts, a URL that would leave the service, a header
that is not plain text or that would carry the credential) refuses it here, so no card is ever
shown for an action that cannot run, and nothing is refused after a human said yes. The
executor then sends the prepared value as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from safeport.action_gateway.executors.https.target import build_target
from safeport.action_gateway.executors.interface import (
    ActionError,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.action_gateway.executors.ssh.command import render_command
from safeport.shared.schemas.config import (
    HttpOperation,
    HttpService,
    SqlDatabase,
    SqlQuery,
    SshCommand,
    SshHost,
)

# Header values a policy may declare: printable ASCII; anything else is refused by HTTP stacks
# with an exception that quotes the value, or worse, splits the header.
HEADER_VALUE = re.compile(r"^[\x20-\x7e]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
# `identity`: a compressed answer could expand far past the cap before it is counted.
_DEFAULT_HEADERS = (
    ("Accept", "application/json"),
    ("Accept-Encoding", "identity"),
    ("User-Agent", "safeport"),
)


def prepare_ssh(
    host_id: str,
    host: SshHost,
    command_id: str,
    command: SshCommand,
    args: Mapping[str, object],
) -> SshAction:
    """The exact command string, validated, quoted and length-checked."""
    return SshAction(host_id, host, command_id, command, render_command(command, args))


def prepare_http(
    service_id: str,
    service: HttpService,
    operation_id: str,
    operation: HttpOperation,
    args: Mapping[str, object],
) -> HttpAction:
    """The exact method, URL and body, and every header but the credential's."""
    target = build_target(service, operation, args)
    credential = credential_header_name(service)
    headers = dict(_DEFAULT_HEADERS)
    for name, value in operation.headers.items():
        if not _HEADER_NAME.match(name):
            raise ActionError("invalid_target", "an operation header name is not a plain token")
        if name.lower() == credential.lower():
            raise ActionError("invalid_target", f"operation header {name!r} is the credential's")
        if not HEADER_VALUE.match(value):
            raise ActionError("invalid_target", f"operation header {name!r} is not plain text")
        for existing in [key for key in headers if key.lower() == name.lower()]:
            del headers[existing]  # the declared value replaces a default, never doubles it
        headers[name] = value
    if target.body is not None:
        for existing in [key for key in headers if key.lower() == "content-type"]:
            del headers[existing]
        headers["Content-Type"] = "application/json"  # the body is always the JSON built here
    return HttpAction(
        service_id, service, operation_id, operation, target, tuple(headers.items()), credential
    )


def prepare_sql(
    database_id: str,
    database: SqlDatabase,
    query_id: str,
    query: SqlQuery,
    args: Mapping[str, object],
) -> SqlAction:
    """The exact statement and its values, each bound by the driver, never put into the text."""
    bound: list[tuple[str, str | int]] = []
    for name in sorted(query.params):
        value = args.get(name)
        if not isinstance(value, str | int):
            raise ActionError("invalid_target", f"query param {name!r} has no value")
        if isinstance(value, str) and "\x00" in value:
            raise ActionError("invalid_target", f"query param {name!r} holds a NUL character")
        bound.append((name, value))
    return SqlAction(database_id, database, query_id, query, tuple(bound))


def credential_header_name(service: HttpService) -> str:
    """The header that carries the credential: ``Authorization`` or the one ``header:`` names."""
    if service.auth in ("basic", "bearer"):
        return "Authorization"
    return service.auth.removeprefix("header:")
