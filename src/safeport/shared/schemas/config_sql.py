"""The `[sql.databases.NAME]` tables of gateway.toml: PostgreSQL databases and their queries.

A database is reached over TLS with ``verify-full`` against a CA pinned in the policy text, as
one role, with a password or a client certificate from the vault. Each query is one fixed
read-only statement (:mod:`safeport.shared.sql_statement` refuses anything else in words),
typed parameters the driver binds, caps and the columns the agent may see.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from safeport.shared.schemas.config_gateway import PolicyTable as _Strict
from safeport.shared.schemas.config_params import ParamName, ParamSpec
from safeport.shared.sql_statement import StatementRefused, check_statement

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
ColumnName = Annotated[str, Field(min_length=1, max_length=63)]
Reason = Annotated[str, Field(min_length=8, max_length=200, pattern=r"^[\x20-\x7e]+$")]


class SqlQuery(_Strict):
    statement: Annotated[str, Field(min_length=1, max_length=16384)]
    """One SELECT/WITH/VALUES/TABLE statement; `{name}` is a parameter the driver binds."""
    description: str = ""
    """What the query returns, in words the agent reads in its tool list."""
    columns: list[ColumnName] = Field(default_factory=list)
    """The result columns returned to the agent, by name (`[]`: the row count only)."""
    max_rows: Annotated[int, Field(ge=1, le=100000)] = 1000
    """The most rows fetched; more are never read (the answer says it was cut)."""
    max_bytes: Annotated[int, Field(ge=1, le=64 * 1024 * 1024)] = 1024 * 1024
    """The most bytes of values fetched; the row that passes it is not returned."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10
    """Seconds the query may take, fetching included (the statement and lock timeouts too)."""
    approval: Literal["session", "per-call"] | None = None
    """This query's approval, overriding the credential's (unset: the credential's)."""
    params: dict[ParamName, ParamSpec] = Field(default_factory=dict)
    """One constraint per `{name}` used in `statement`."""

    @property
    def read_only(self) -> bool:
        """Always: every query runs in a READ ONLY transaction that is rolled back, so it may
        be approved once per session like any other read."""
        return True

    @model_validator(mode="after")
    def _one_reading_statement(self) -> SqlQuery:
        try:
            check_statement(self.statement, frozenset(self.params))
        except StatementRefused as exc:
            raise ValueError(str(exc)) from None
        return self


class SqlDatabase(_Strict):
    host: Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:-]+$")]
    """The server's DNS name or IP address, as its certificate names it."""
    port: Annotated[int, Field(ge=1, le=65535)] = 5432
    """The PostgreSQL port."""
    database: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[\x21-\x7e]+$")]
    """The database name."""
    user: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9_.-]+$")]
    """The role to log in as (least privilege: no superuser, no write privileges)."""
    credential: Name
    """A token credential (the role's password) or an ssh-key one (the client certificate's
    private key, PEM, with `client_cert_pem`)."""
    ca_pem: Annotated[str, Field(max_length=256 * 1024)]
    """The CA that signed the server's certificate, PEM, inline (verify-full against it only)."""
    client_cert_pem: Annotated[str, Field(max_length=256 * 1024)] | None = None
    """The client certificate, PEM, when the role logs in with one (its key is the credential)."""
    connect_timeout_s: Annotated[int, Field(ge=1, le=120)] = 10
    """Seconds to wait for the connection and login."""
    allow_write_privileges: Reason | None = None
    """Why the role may hold write privileges on tables (shown on every card); unset: refused."""
    allow_superuser: Reason | None = None
    """Why the role may be a superuser, hold server-file roles or file functions, or create roles,
    replicate or bypass row security (shown on every card); unset: refused."""
    queries: dict[Name, SqlQuery] = Field(default_factory=dict)
    """The only queries an agent may ask to run there, by name."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _pem_text(self) -> SqlDatabase:
        for key in ("ca_pem", "client_cert_pem"):
            value = getattr(self, key)
            if value is not None and "-----BEGIN CERTIFICATE-----" not in value:
                raise ValueError(
                    f"`{key}` must hold PEM certificates (-----BEGIN CERTIFICATE-----)"
                )
        return self


class SqlSection(_Strict):
    databases: dict[Name, SqlDatabase] = Field(default_factory=dict)
    """The PostgreSQL databases, by name."""


def card_notes(database: SqlDatabase) -> tuple[str, ...]:
    """The words a policy gave for a role that is more than least privilege, for every card."""
    notes = []
    if database.allow_superuser is not None:
        notes.append(f"role may be privileged: {database.allow_superuser}")
    if database.allow_write_privileges is not None:
        notes.append(f"role may write: {database.allow_write_privileges}")
    return tuple(notes)
