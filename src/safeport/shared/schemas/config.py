"""The gateway policy file (`gateway.toml`) as strict models.

Parse at the edge: :func:`parse_gateway_policy` turns TOML text into a :class:`GatewayPolicy` or
raises :class:`~safeport.errors.ConfigError` naming the key and, where TOML tells us, the line.
Every object that exists is well-formed: references resolve, every SSH host pins its keys, every
HTTPS base URL is https, every param has exactly one constraint.
"""

from __future__ import annotations

import hashlib
import tomllib
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, ValidationError, model_validator

from safeport.errors import ConfigError

# The [gateway] and [callers] tables live beside this module; their names stay importable here.
from safeport.shared.schemas.config_audit import AuditSettings as AuditSettings
from safeport.shared.schemas.config_audit import TimestampSettings as TimestampSettings
from safeport.shared.schemas.config_audit import TsaSettings as TsaSettings
from safeport.shared.schemas.config_credential import Approval as Approval
from safeport.shared.schemas.config_credential import Credential as Credential
from safeport.shared.schemas.config_gateway import SYSLOG_TARGET as SYSLOG_TARGET
from safeport.shared.schemas.config_gateway import ApprovalFactor as ApprovalFactor
from safeport.shared.schemas.config_gateway import ApprovalsSettings as ApprovalsSettings
from safeport.shared.schemas.config_gateway import CallerRule as CallerRule
from safeport.shared.schemas.config_gateway import Callers as Callers
from safeport.shared.schemas.config_gateway import GatewaySettings as GatewaySettings
from safeport.shared.schemas.config_gateway import PolicyTable as _Strict
from safeport.shared.schemas.config_gateway import RemoteSettings as RemoteSettings
from safeport.shared.schemas.config_params import (
    PLACEHOLDER,
    ParamName,
    ParamSpec,
    check_placeholders,
    json_placeholders,
)
from safeport.shared.schemas.config_problems import describe_problem
from safeport.shared.schemas.config_sources import SourcesSection
from safeport.shared.schemas.config_sources import check_origin as _check_origin
from safeport.shared.schemas.config_sources import check_sources as _check_sources
from safeport.shared.schemas.config_sql import SqlDatabase as SqlDatabase
from safeport.shared.schemas.config_sql import SqlQuery as SqlQuery
from safeport.shared.schemas.config_sql import SqlSection as SqlSection

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]


# Host key types the SSH executor can compare; DSA is obsolete and security-key (sk-) types are
# user-key formats, never host keys a pinned check could match.
PINNABLE_KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
    }
)


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class SshCommand(_Strict):
    argv: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    """The command run on the host, word by word; `{name}` is replaced by the param's value."""
    description: str = ""
    """What the command does, in words the agent reads in its tool list."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30
    """Seconds before the remote command is signalled and its channel closed."""
    max_output_bytes: Annotated[int, Field(ge=1, le=16 * 1024 * 1024)] = 65536
    """The most output bytes returned, per stream (stdout and stderr)."""
    read_only: bool = False
    """Your word that the command changes nothing: told to the agent and shown on the card."""
    approval: Approval | None = None
    """This command's approval, overriding the credential's (unset: the credential's)."""
    allow_leading_dash: list[ParamName] = Field(default_factory=list)
    """Params whose value may start with `-` (otherwise refused, so no value becomes an option)."""
    params: dict[ParamName, ParamSpec] = Field(default_factory=dict)
    """One constraint per `{name}` used in `argv`."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _placeholders_declared(self) -> SshCommand:
        used = {name for part in self.argv for name in PLACEHOLDER.findall(part)}
        check_placeholders(used, self.params, "argv")
        unknown = set(self.allow_leading_dash) - set(self.params)
        if unknown:
            raise ValueError(f"`allow_leading_dash` names undeclared params: {sorted(unknown)}")
        return self


class SshHost(_Strict):
    address: str
    """A DNS name or a plain IP address."""
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    """The SSH port."""
    user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")]
    """The remote account to log in as."""
    host_keys: Annotated[list[str], Field(min_length=1)]
    """The host's public keys as in known_hosts ("type base64"); `sp ssh scan` prints them."""
    credential: Name
    """The ssh-key credential (a name under `[credentials]`) to log in with."""
    connect_timeout_s: Annotated[float, Field(gt=0, le=120)] = 10
    """Seconds to wait for the connection and login."""
    commands: dict[Name, SshCommand] = Field(default_factory=dict)
    """The only commands an agent may ask to run there, by name."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _keys_look_like_keys(self) -> SshHost:
        for key in self.host_keys:
            parts = key.split()
            if len(parts) < 2:
                raise ValueError("each of `host_keys` must be '<type> <base64>' as in known_hosts")
            if parts[0] not in PINNABLE_KEY_TYPES:
                raise ValueError(
                    f"host key type {parts[0]!r} cannot be pinned; use one of "
                    + ", ".join(sorted(PINNABLE_KEY_TYPES))
                )
        return self


class HttpOperation(_Strict):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]
    """The HTTP method."""
    path: Annotated[str, Field(pattern=r"^/")]
    """The path below `base_url`; `{name}` is replaced by the param's value, percent-encoded."""
    query: dict[str, str] = Field(default_factory=dict)
    """Query parameters sent, each a fixed text or a `{name}` template."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Fixed request headers (never the credential's, which the gateway adds)."""
    json_body: dict[str, object] | None = None
    """The JSON request body; any string in it may hold `{name}` templates."""
    response_fields: list[str] = Field(default_factory=list)
    """The dotted paths of a 2xx JSON answer returned to the agent (`[]`: none of the body)."""
    description: str = ""
    """What the operation does, in words the agent reads in its tool list."""
    read_only: bool = False
    """The operation changes nothing: only GET or HEAD may say so."""
    approval: Approval | None = None
    """This operation's approval, overriding the credential's (unset: the credential's)."""
    params: dict[ParamName, ParamSpec] = Field(default_factory=dict)
    """One constraint per `{name}` used in `path`, `query` or `json_body`."""

    @model_validator(mode="after")
    def _placeholders_declared(self) -> HttpOperation:
        used = set(PLACEHOLDER.findall(self.path))
        for value in self.query.values():
            used |= set(PLACEHOLDER.findall(value))
        used |= json_placeholders(self.json_body)
        check_placeholders(used, self.params, "path/query/json_body")
        for name in self.headers:
            if name.lower() in GATEWAY_HEADERS:
                raise ValueError(f"header {name!r} is set by the gateway and cannot be declared")
        if self.read_only and self.method in WRITE_METHODS:
            raise ValueError(
                f"`read_only = true` with method {self.method}: a {self.method} may change things;"
                " remove `read_only` (or use GET/HEAD if the call only reads)"
            )
        return self


# Headers a policy may not declare: the credential's, the connection's framing and transfer
# (a declared one would change the bytes sent after the card showed them: `Transfer-Encoding`
# re-frames the body, `Content-Length` cuts it, `Accept-Encoding` turns on compression the
# gateway refuses to read), and the ones a proxy or a cookie jar would act on.
GATEWAY_HEADERS = frozenset(
    {
        "authorization", "proxy-authorization", "cookie", "host",
        "content-length", "transfer-encoding", "te", "trailer", "connection", "keep-alive",
        "upgrade", "expect", "accept-encoding", "content-encoding", "proxy-connection",
    }
)  # fmt: skip


class HttpService(_Strict):
    base_url: str
    """The https:// URL every operation's path is appended to."""
    credential: Name
    """The token, basic or oauth credential (a name under `[credentials]`) sent with each call."""
    auth: Annotated[str, Field(pattern=r"^(bearer|basic|header:[A-Za-z0-9-]{1,64})$")] = "bearer"
    """How the credential is sent: "bearer", "basic" or "header:NAME" (the token as NAME)."""
    ca_file: str | None = None
    """A root-owned PEM file of a private CA to trust instead of the system roots."""
    # The CA itself, in the policy text: bound by the digest the human accepts, shown in the
    # diff, and no file anyone could swap afterwards.
    ca_pem: Annotated[str, Field(max_length=256 * 1024)] | None = None
    """A private CA's PEM text, inline: bound by the accepted policy's digest."""
    allow_private_addresses: bool = False
    """Allow private, loopback and CGNAT answers (link-local and metadata are always refused)."""
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30
    """Seconds a call may take, connection included."""
    max_response_bytes: Annotated[int, Field(ge=1, le=64 * 1024 * 1024)] = 1024 * 1024
    """The largest answer read; a longer one is refused."""
    operations: dict[Name, HttpOperation] = Field(default_factory=dict)
    """The only requests an agent may ask for, by name."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _https_only(self) -> HttpService:
        parts = urlsplit(self.base_url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("`base_url` must be an https:// URL with a host")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("`base_url` may not carry userinfo, a query or a fragment")
        if self.ca_file is not None and self.ca_pem is not None:
            raise ValueError("give `ca_file` or `ca_pem`, not both")
        if self.ca_pem is not None and "-----BEGIN CERTIFICATE-----" not in self.ca_pem:
            raise ValueError("`ca_pem` must hold PEM certificates (-----BEGIN CERTIFICATE-----)")
        return self


class SshSection(_Strict):
    hosts: dict[Name, SshHost] = Field(default_factory=dict)
    """The SSH hosts, by name."""


class HttpSection(_Strict):
    services: dict[Name, HttpService] = Field(default_factory=dict)
    """The HTTPS services, by name."""


class GatewayPolicy(_Strict):
    """The whole accepted policy; ``digest`` identifies it in every action record."""

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    """The gateway's own settings."""
    callers: Callers | None = None
    """Which processes may propose actions (absent: any process of your user)."""
    approvals: ApprovalsSettings = Field(default_factory=ApprovalsSettings)
    """How a yes is proven for every credential (a security key, or the passphrase)."""
    credentials: dict[Name, Credential] = Field(default_factory=dict)
    """The credentials the vault holds, by name; the secrets themselves are never here."""
    sources: SourcesSection = Field(default_factory=SourcesSection)
    """OpenBao or Vault servers credentials may come from (besides the local vault)."""
    ssh: SshSection = Field(default_factory=SshSection)
    """SSH hosts and their commands."""
    http: HttpSection = Field(default_factory=HttpSection)
    """HTTPS services and their operations."""
    sql: SqlSection = Field(default_factory=SqlSection)
    """PostgreSQL databases and their read-only queries."""
    remote: RemoteSettings = Field(default_factory=RemoteSettings)
    """Remote MCP clients (the desktop tunnel): their tokens and whether they may act."""
    audit: AuditSettings = Field(default_factory=AuditSettings)
    """What the journals' evidence also goes to: RFC 3161 time-stamping authorities."""

    @model_validator(mode="after")
    def _references_resolve(self) -> GatewayPolicy:
        for name, credential in self.credentials.items():
            _check_origin(name, credential.kind, credential, self.sources)
        _check_sources({n: (c.kind, c.source) for n, c in self.credentials.items()}, self.sources)
        for name, host in self.ssh.hosts.items():
            cred = self.credentials.get(host.credential)
            if cred is None:
                raise ValueError(
                    f"ssh host {name!r} uses undeclared credential {host.credential!r}"
                )
            if cred.kind != "ssh-key":
                raise ValueError(f"ssh host {name!r} needs an ssh-key credential, not {cred.kind}")
            for command_id, command in host.commands.items():
                _only_tightens(
                    cred, host.credential, command, f"ssh host {name!r} command {command_id!r}"
                )
        for name, service in self.http.services.items():
            cred = self.credentials.get(service.credential)
            if cred is None:
                raise ValueError(
                    f"http service {name!r} uses undeclared credential {service.credential!r}"
                )
            if cred.kind == "ssh-key":
                raise ValueError(f"http service {name!r} cannot use an ssh-key credential")
            if (service.auth == "basic") != (cred.kind == "basic"):
                raise ValueError(
                    f"http service {name!r}: auth = {service.auth!r} cannot use a "
                    f"{cred.kind} credential (basic auth takes exactly a basic credential)"
                )
            for operation_id, operation in service.operations.items():
                where = f"http service {name!r} operation {operation_id!r}"
                _only_tightens(cred, service.credential, operation, where)
        for name, database in self.sql.databases.items():
            _check_sql_credential(self.credentials, name, database)
        return self


def _check_sql_credential(credentials: dict[str, Credential], name: str, db: SqlDatabase) -> None:
    cred = credentials.get(db.credential)
    if cred is None:
        raise ValueError(f"sql database {name!r} uses undeclared credential {db.credential!r}")
    wanted = "ssh-key" if db.client_cert_pem is not None else "token"
    if cred.database_role is not None:
        wanted = "basic"  # a role OpenBao's database engine issues per query: name and password
    if cred.kind != wanted:
        raise ValueError(
            f"sql database {name!r} needs a {wanted} credential, not {cred.kind} (a token holds"
            " the role's password; with `client_cert_pem`, an ssh-key holds the PEM private key)"
        )
    for query_id, query in db.queries.items():
        _only_tightens(cred, db.credential, query, f"sql database {name!r} query {query_id!r}")


def approval_of(credential: Credential, action: SshCommand | HttpOperation | SqlQuery) -> Approval:
    """How calls of ``action`` are approved: its own `approval`, else its credential's."""
    return action.approval or credential.approval


def _only_tightens(
    credential: Credential, name: str, action: SshCommand | HttpOperation | SqlQuery, what: str
) -> None:
    # One session card covers every session-approved action of the credential, so an action
    # that may change things must not slip under a session its credential never grants.
    if action.approval == "session" and credential.approval == "per-call" and not action.read_only:
        raise ValueError(
            f'credential {name!r} is approved per call, and approval = "session" would loosen '
            f"it for {what}: only a `read_only = true` action may be approved once per session"
        )


def parse_gateway_policy(text: str) -> tuple[GatewayPolicy, str]:
    """Parse gateway.toml; return the policy and its digest (SHA-256 of the accepted text)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"gateway.toml is not valid TOML: {exc}") from exc
    try:
        policy = GatewayPolicy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_problem(exc, text, GatewayPolicy)) from None
    return policy, policy_digest(text)


def policy_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
