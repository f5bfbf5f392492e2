"""The `[gateway]` and `[callers]` tables of gateway.toml, and the strict base of every table.

Each field's docstring is its description: it is in the JSON Schema editors read and in the
policy reference generated from the models (docs/reference/policy.md), so it is one sentence a
newcomer can act on.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from safeport.shared.schemas.audit import Hex64


class PolicyTable(BaseModel):
    """A table of gateway.toml: unknown keys are refused, values are not coerced."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True
    )


# Where signed checkpoint heads go besides checkpoint.json: the local syslog socket, a
# collector over UDP or TCP (host name, IPv4, or [IPv6], and a port), or nowhere.
SYSLOG_TARGET = re.compile(
    r"(?:local|off|(?P<proto>udp|tcp)://"
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>[0-9]{1,5}))"
)


class GatewaySettings(PolicyTable):
    approval_timeout_s: Annotated[int, Field(ge=1, le=3600)] = 120
    """Seconds a card waits for a human; unanswered, the call is refused as timed out."""
    auto_lock_minutes: Annotated[int, Field(ge=0, le=10080)] = 480
    """Minutes without human activity on control.sock before the vault locks (0: never)."""
    session_max_minutes: Annotated[int, Field(ge=1, le=10080)] = 720
    """The longest a session approval lasts, even while its process lives."""
    max_connections: Annotated[int, Field(ge=1, le=1024)] = 32
    """Agent connections the gateway serves at once."""
    allow_approver_in_client: bool = False
    """Let an approver run inside the requesting client's process tree (weaker: off)."""
    syslog: str = "local"
    """Where signed journal heads go: "local" (/dev/log), "udp://HOST:PORT", "tcp://…" or "off"."""

    @model_validator(mode="after")
    def _syslog_target(self) -> GatewaySettings:
        match = SYSLOG_TARGET.fullmatch(self.syslog)
        if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
            raise ValueError(
                '`syslog` must be "local", "off", "udp://HOST:PORT" or "tcp://HOST:PORT"'
            )
        return self


ApprovalFactor = Literal["passphrase", "key"]


class ApprovalsSettings(PolicyTable):
    approval_factor: ApprovalFactor = "passphrase"
    """"key": every yes needs a touch of an enrolled security key (`sp approver enroll`)."""
    user_verification: bool = False
    """With a key: the key must also verify its user (a PIN or a fingerprint) for each yes."""


class RemoteSettings(PolicyTable):
    actions: bool = False
    """Let remote clients (over HTTP, agent profile) propose actions; each is asked per call."""
    access_token_minutes: Annotated[int, Field(ge=1, le=10)] = 10
    """Lifetime of the access tokens issued to remote clients (refresh tokens renew them)."""


class CallerRule(PolicyTable):
    uid: int | None = None
    """The user id the proposing process must run as."""
    exe: str | None = None
    """The absolute path of the program that must be in the proposing process chain."""
    exe_sha256: Hex64 | None = None
    """The SHA-256 that program's executable must have."""
    team_id: str | None = None
    """On macOS, the Team ID that must have signed the program."""
    ancestor_exe: str | None = None
    """A program that must be an ancestor of the proposing process (the client, say)."""
    # "package": on Linux the executable is what a root-owned package record (dpkg, rpm, pip)
    # installed; "valid": on macOS, a valid code signature. Either vouches for the binary only,
    # and qualifies a rule that pins one (see the validator below).
    signature: Literal["package", "valid"] | None = None
    """What must vouch for the binary: "package" (a root-owned package record) or "valid"."""
    # A rule naming a program never admits an interpreter (python, node, sh, ld.so …): the script
    # it runs is read from its command line, which the process can rewrite, so no one can vouch
    # for it. "any script" says out loud that the named interpreter may run anything.
    interpreter: Literal["any script"] | None = None
    """Set to "any script" to admit the named program as an interpreter running any script."""

    @model_validator(mode="after")
    def _interpreter_qualifies_a_program(self) -> CallerRule:
        names_program = any(
            value is not None for value in (self.exe, self.exe_sha256, self.team_id, self.signature)
        )
        if self.interpreter is not None and not names_program:
            raise ValueError(
                "`interpreter` only qualifies a rule that names a program "
                "(`exe`, `exe_sha256`, `team_id` or `signature`)"
            )
        # `signature` alone is every packaged (or signed) program, and many run code they are
        # given under names no list holds (gdb's Python, tclsh, sqlite3 `.load`): it names none.
        pinned = any(value is not None for value in (self.exe, self.exe_sha256, self.team_id))
        if self.signature is not None and not pinned and self.interpreter is None:
            raise ValueError(
                "`signature` alone admits every packaged program, and packaged programs run code "
                "they are given (gdb, tclsh, sqlite3 …): pin the binary with `exe` or "
                '`exe_sha256`, or say `interpreter = "any script"`'
            )
        return self


class Callers(PolicyTable):
    rules: list[CallerRule]
    """The processes that may propose actions: one match of any rule admits a process."""
