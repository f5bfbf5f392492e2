"""The seam between the decision ladder and the network: prepared actions and the executor.

The ladder prepares an :class:`SshAction` or :class:`HttpAction` once, from the *accepted* policy
and validated arguments, before anyone is asked (``executors/prepare.py``): the exact command
string, or the exact method, URL and body bytes. The approval card is rendered from that value
and the executor sends that value; neither renders anything of its own, so what a human approves
is what runs, byte for byte. Executors translate every foreign exception (paramiko, httpx, ssl,
socket) into an :class:`ActionError` once, at their boundary; the ladder never calls paramiko or
httpx. Calls are blocking; the gateway runs them in a worker thread.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from safeport.errors import Error
from safeport.shared.schemas.config import (
    GatewayPolicy,
    HttpOperation,
    HttpService,
    SqlDatabase,
    SqlQuery,
    SshCommand,
    SshHost,
)
from safeport.shared.schemas.config_sql import card_notes
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult
from safeport.shared.visible_text import needs_escape
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret

ActionFailure = Literal[
    "unreachable",  # connect failed / refused / DNS
    "host_key_mismatch",  # the server's key is not pinned
    "auth_failed",
    "timeout",
    "address_refused",  # resolved to an address the service may not reach
    "redirect_blocked",
    "bad_response",  # non-JSON, missing field, over the cap
    "tls_failed",
    "invalid_target",  # URL or command could not be built safely
    # The credential's OpenBao/Vault server (executors/openbao): nothing falls back elsewhere.
    "source_sealed",
    "source_unreachable",
    "source_auth",  # the gateway's login was refused, or its token no longer holds
    "source_timeout",
    "source_tls",  # the server's certificate does not chain to the pinned CA
    "source_refused",  # the server refused this path or role to the gateway
    "role_refused",  # a database role with more than the policy allows
    "query_refused",  # the database refused the statement (read-only, permission, caps)
    # The statement failed on the values it met (a cast, a division by zero): the remote
    # failed, nothing was denied, so it is `upstream` like any other server-side failure.
    "query_failed",
    # An OAuth grant its provider refused (revoked, expired, a rotated refresh token reused):
    # nothing is retried until a human reconnects it.
    "oauth_grant_dead",
]

# How the gateway ended work that outlived its deadline: the server honoured a cancel (or an SSH
# signal), the connection was closed on it, or (SQL) its backend was terminated.
StoppedBy = Literal["cancel", "close", "terminate"]


class ActionError(Error):
    """A remote action failed; ``failure`` is the category, the message never holds a secret."""

    exit_code = 1
    wire_code = "denied"

    def __init__(
        self,
        failure: ActionFailure,
        message: str,
        *,
        hint: str | None = None,
        stopped_by: StoppedBy | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.failure = failure
        # A deadline kept from the gateway's side: the step that ended the remote work
        # (journaled with the outcome).
        self.stopped_by = stopped_by

    @property
    def code(self) -> Literal["upstream", "timeout", "denied"]:
        """The wire error code this failure maps to."""
        if self.failure == "timeout":
            return "upstream"  # `timeout` on the wire means no approver in time
        if self.failure in ("address_refused", "invalid_target", "role_refused", "query_refused"):
            return "denied"
        return "upstream"


@dataclass(frozen=True)
class ServiceOrigin:
    """Where a service lives: the normalised host, the port and the declared base path."""

    host: str
    port: int
    base_path: str


@dataclass(frozen=True)
class RequestTarget:
    origin: ServiceOrigin
    method: str
    url: str
    raw_path: str
    """Path and query exactly as they will be sent."""
    body: bytes | None


@dataclass(frozen=True)
class SshAction:
    """One prepared SSH action: where, as whom, and the exact command string to send."""

    host_id: str
    host: SshHost
    command_id: str
    command: SshCommand
    command_line: str

    def card_lines(self) -> tuple[CardLine, ...]:
        host = self.host
        return (
            CardLine("host", f"{host.user}@{host.address}:{host.port} ({self.host_id})"),
            CardLine("command", self.command_line),
        )

    def holds_non_ascii(self) -> bool:
        return not self.command_line.isascii()

    def digest(self) -> str:
        return _digest(
            ["ssh", self.host_id, self.host.user, self.host.address, str(self.host.port)],
            self.command_line.encode("utf-8"),
        )


@dataclass(frozen=True)
class HttpAction:
    """One prepared HTTPS request: method, full URL, exact body bytes and the headers set."""

    service_id: str
    service: HttpService
    operation_id: str
    operation: HttpOperation
    target: RequestTarget
    headers: tuple[tuple[str, str], ...]  # every header sent but the credential's
    credential_header: str  # the name only; its value is added inside the executor

    def card_lines(self) -> tuple[CardLine, ...]:
        names = [name for name, _ in self.headers]
        lines = [
            CardLine("request", f"{self.target.method} {self.target.url}"),
            CardLine("headers", ", ".join([*names, f"{self.credential_header} (the credential)"])),
        ]
        if self.target.body is not None:
            lines.append(CardLine("body", body_for_card(self.target.body), json_text=True))
        return tuple(lines)

    def holds_non_ascii(self) -> bool:
        return not (self.target.url.isascii() and (self.target.body or b"").isascii())

    def digest(self) -> str:
        header_text = [f"{name}: {value}" for name, value in self.headers]
        return _digest(
            ["http", self.target.method, self.target.url, *header_text, self.credential_header],
            self.target.body or b"",
        )


@dataclass(frozen=True)
class SqlAction:
    """One prepared query: where, as whom, the exact statement and the values bound to it."""

    database_id: str
    database: SqlDatabase
    query_id: str
    query: SqlQuery
    bound: tuple[tuple[str, str | int], ...]  # (param, value), in the statement's order

    def card_lines(self) -> tuple[CardLine, ...]:
        db = self.database
        lines = [
            CardLine(
                "database", f"{db.user}@{db.host}:{db.port}/{db.database} ({self.database_id})"
            ),
            CardLine("statement", self.query.statement),
        ]
        if self.bound:
            values = json.dumps(dict(self.bound)).encode()
            lines.append(CardLine("values", body_for_card(values), json_text=True))
        lines += [CardLine("role", note) for note in card_notes(db)]
        return tuple(lines)

    def holds_non_ascii(self) -> bool:
        return not (self.query.statement.isascii() and all(str(v).isascii() for _, v in self.bound))

    def digest(self) -> str:
        db = self.database
        payload = json.dumps([self.query.statement, list(self.bound)], separators=(",", ":"))
        return _digest(
            ["sql", self.database_id, db.user, db.host, str(db.port), db.database],
            payload.encode("utf-8"),
        )


def privileged_role_check(
    executor: Executor, secret_of: Callable[[str], object]
) -> Callable[[GatewayPolicy], None]:
    """The check made at accept: it raises when a database's role holds more than the policy
    allows, so a policy is never served whose queries would run as a role that can write."""

    def check(policy: GatewayPolicy) -> None:
        problems, _ = executor.inspect_roles(policy, secret_of)
        if problems:
            raise ActionError(
                "role_refused",
                "; ".join(problems),
                hint="give the role less (a read-only role), or say why under the database "
                "with `allow_write_privileges` / `allow_superuser` (shown on every card)",
            )

    return check


class CardLine(NamedTuple):
    """One labelled line of a card, as the prepared action reads."""

    label: str
    text: str
    json_text: bool = False  # already inert JSON (see body_for_card); shown as it is


def body_for_card(body: bytes) -> str:
    """The body as indented JSON that parses back to exactly the value sent (keys in sent order,
    nothing cut), with every invisible character written as a JSON ``\\uXXXX`` escape, so a
    value can neither add a line nor hide a character. A body that is not JSON is shown as one
    JSON string."""
    try:
        # Not outside input: the body is the gateway's own json.dumps of a declared template
        # and validated values (https/target.py), or of a query's bound values.
        value = json.loads(body)
    except ValueError:
        value = body.decode("utf-8", "backslashreplace")
    text = json.dumps(value, indent=2, ensure_ascii=False)
    # Outside strings json.dumps writes only ASCII, spaces and the indentation's line breaks;
    # an invisible character can only sit inside a string, where a \u escape is the same value.
    return "".join(
        _json_escape(char) if char != "\n" and needs_escape(char) else char for char in text
    )


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _digest(parts: list[str], payload: bytes) -> str:
    header = json.dumps(parts, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(header + b"\0" + payload).hexdigest()


class Executor(Protocol):
    def check_before_card(self, action: SshAction | HttpAction | SqlAction) -> None:
        """Raise the :class:`ActionError` a call would meet on what can be checked now (the
        addresses a service's name resolves to, its trust files), so no card is shown for it;
        the executor checks again when it connects."""
        ...

    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult: ...

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult: ...

    def sql_query(
        self, action: SqlAction, secret: TokenSecret | SshKeySecret | BasicSecret
    ) -> SqlResult:
        """Run the prepared query read-only; connect (and inspect the role) when no pooled
        connection is open."""
        ...

    def inspect_roles(
        self, policy: GatewayPolicy, secret_of: Callable[[str], object]
    ) -> tuple[list[str], list[str]]:
        """Connect to every database ``policy`` declares with its credential: what its role
        holds beyond what the policy allows, and what could not be judged now, in words."""
        ...

    def close_all(self) -> None:
        """Drop every pooled connection (on vault lock and gateway stop)."""
