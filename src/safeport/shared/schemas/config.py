"""The gateway policy file (`gateway.toml`) as strict models.

Parse at the edge: :func:`parse_gateway_policy` turns TOML text into a :class:`GatewayPolicy` or
raises :class:`~safeport.errors.ConfigError` naming the key and, where TOML tells us, the line.
Every object that exists is well-formed: references resolve, every SSH host pins its keys, every
HTTPS base URL is https, every param has exactly one constraint.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

from safeport.errors import ConfigError
from safeport.shared.schemas.audit import Hex64
from safeport.shared.text_lines import split_lines

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
ParamName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
# `{name}` in an argv, path, query or body template; anything else (`${HOME}`) is literal text.
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]{0,63})\}")


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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ParamSpec(_Strict):
    """One argument's constraint: exactly one of pattern, enum, or int with bounds."""

    pattern: str | None = None
    enum: list[str] | None = None
    type: Literal["str", "int"] = "str"
    min: StrictInt | None = None
    max: StrictInt | None = None
    max_length: Annotated[int, Field(ge=1, le=4096)] = 256

    @model_validator(mode="after")
    def _one_constraint(self) -> ParamSpec:
        kinds = [self.pattern is not None, self.enum is not None, self.type == "int"]
        if sum(kinds) != 1:
            raise ValueError('a param needs exactly one of `pattern`, `enum` or `type = "int"`')
        if self.type != "int" and (self.min is not None or self.max is not None):
            raise ValueError('`min`/`max` only apply to `type = "int"`')
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"`pattern` is not a valid regular expression: {exc}") from exc
        if self.enum is not None and not self.enum:
            raise ValueError("`enum` must list at least one value")
        return self


# Where signed checkpoint heads go besides checkpoint.json: the local syslog socket, a
# collector over UDP or TCP (host name, IPv4, or [IPv6], and a port), or nowhere.
SYSLOG_TARGET = re.compile(
    r"(?:local|off|(?P<proto>udp|tcp)://"
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>[0-9]{1,5}))"
)


class GatewaySettings(_Strict):
    approval_timeout_s: Annotated[int, Field(ge=1, le=3600)] = 120
    auto_lock_minutes: Annotated[int, Field(ge=0, le=10080)] = 480
    session_max_minutes: Annotated[int, Field(ge=1, le=10080)] = 720
    max_connections: Annotated[int, Field(ge=1, le=1024)] = 32
    allow_approver_in_client: bool = False
    # "local" (/dev/log), "udp://HOST:PORT", "tcp://HOST:PORT" or "off".
    syslog: str = "local"

    @model_validator(mode="after")
    def _syslog_target(self) -> GatewaySettings:
        match = SYSLOG_TARGET.fullmatch(self.syslog)
        if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
            raise ValueError(
                '`syslog` must be "local", "off", "udp://HOST:PORT" or "tcp://HOST:PORT"'
            )
        return self


class CallerRule(_Strict):
    uid: int | None = None
    exe: str | None = None
    exe_sha256: Hex64 | None = None
    team_id: str | None = None
    ancestor_exe: str | None = None
    # "package": on Linux the executable is what a root-owned package record (dpkg, rpm, pip)
    # installed; "valid": on macOS, a valid code signature. Either vouches for the binary only,
    # and qualifies a rule that pins one (see the validator below).
    signature: Literal["package", "valid"] | None = None
    # A rule naming a program never admits an interpreter (python, node, sh, ld.so …): the script
    # it runs is read from its command line, which the process can rewrite, so no one can vouch
    # for it. "any script" says out loud that the named interpreter may run anything.
    interpreter: Literal["any script"] | None = None

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


class Callers(_Strict):
    rules: list[CallerRule]


class Credential(_Strict):
    kind: Literal["token", "basic", "ssh-key"]
    approval: Literal["session", "per-call"] = "per-call"
    rate_per_minute: Annotated[int, Field(ge=1, le=100000)] | None = None


class SshCommand(_Strict):
    argv: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
    description: str = ""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30
    max_output_bytes: Annotated[int, Field(ge=1, le=16 * 1024 * 1024)] = 65536
    read_only: bool = False
    allow_leading_dash: list[ParamName] = Field(default_factory=list)
    params: dict[ParamName, ParamSpec] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True)

    @model_validator(mode="after")
    def _placeholders_declared(self) -> SshCommand:
        used = {name for part in self.argv for name in PLACEHOLDER.findall(part)}
        _check_placeholders(used, self.params, "argv")
        unknown = set(self.allow_leading_dash) - set(self.params)
        if unknown:
            raise ValueError(f"`allow_leading_dash` names undeclared params: {sorted(unknown)}")
        return self


class SshHost(_Strict):
    address: str
    port: Annotated[int, Field(ge=1, le=65535)] = 22
    user: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.-]{0,31}$")]
    host_keys: Annotated[list[str], Field(min_length=1)]
    credential: Name
    connect_timeout_s: Annotated[float, Field(gt=0, le=120)] = 10
    commands: dict[Name, SshCommand] = Field(default_factory=dict)

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
    path: Annotated[str, Field(pattern=r"^/")]
    query: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    json_body: dict[str, object] | None = None
    response_fields: list[str] = Field(default_factory=list)
    description: str = ""
    read_only: bool = False
    params: dict[ParamName, ParamSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _placeholders_declared(self) -> HttpOperation:
        used = set(PLACEHOLDER.findall(self.path))
        for value in self.query.values():
            used |= set(PLACEHOLDER.findall(value))
        used |= _json_placeholders(self.json_body)
        _check_placeholders(used, self.params, "path/query/json_body")
        for name in self.headers:
            if name.lower() in GATEWAY_HEADERS:
                raise ValueError(f"header {name!r} is set by the gateway and cannot be declared")
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
    credential: Name
    auth: Annotated[str, Field(pattern=r"^(bearer|basic|header:[A-Za-z0-9-]{1,64})$")] = "bearer"
    ca_file: str | None = None
    # The CA itself, in the policy text: bound by the digest the human accepts, shown in the
    # diff, and no file anyone could swap afterwards.
    ca_pem: Annotated[str, Field(max_length=256 * 1024)] | None = None
    allow_private_addresses: bool = False
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 30
    max_response_bytes: Annotated[int, Field(ge=1, le=64 * 1024 * 1024)] = 1024 * 1024
    operations: dict[Name, HttpOperation] = Field(default_factory=dict)

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


class HttpSection(_Strict):
    services: dict[Name, HttpService] = Field(default_factory=dict)


class GatewayPolicy(_Strict):
    """The whole accepted policy; ``digest`` identifies it in every action record."""

    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    callers: Callers | None = None
    credentials: dict[Name, Credential] = Field(default_factory=dict)
    ssh: SshSection = Field(default_factory=SshSection)
    http: HttpSection = Field(default_factory=HttpSection)

    @model_validator(mode="after")
    def _references_resolve(self) -> GatewayPolicy:
        for name, host in self.ssh.hosts.items():
            cred = self.credentials.get(host.credential)
            if cred is None:
                raise ValueError(
                    f"ssh host {name!r} uses undeclared credential {host.credential!r}"
                )
            if cred.kind != "ssh-key":
                raise ValueError(f"ssh host {name!r} needs an ssh-key credential, not {cred.kind}")
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
        return self


def parse_gateway_policy(text: str) -> tuple[GatewayPolicy, str]:
    """Parse gateway.toml; return the policy and its digest (SHA-256 of the accepted text)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"gateway.toml is not valid TOML: {exc}") from exc
    try:
        policy = GatewayPolicy.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, text)) from None
    return policy, policy_digest(text)


def policy_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _describe(exc: ValidationError, text: str) -> str:
    """The first problem in the words of gateway.toml: the key, its line, what is wrong."""
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    message = _plain_message(first["type"], str(first["msg"]), first.get("ctx") or {})
    line = _line_of(text, loc) if loc else _line_of_names(text, message)
    at = f" line {line}" if line else ""
    if first["type"] == "extra_forbidden":
        return f"gateway.toml{at}: unknown key `{'.'.join(loc)}`"
    if not loc:
        return f"gateway.toml{at}: {message}"
    joiner = ": " if first["type"] == "value_error" else " "
    return f"gateway.toml{at}: `{'.'.join(loc)}`{joiner}{message}"


def _plain_message(kind: str, message: str, ctx: dict[str, object]) -> str:
    """Pydantic's sentence without pydantic's wording ("Value error, ", "Input should be")."""
    if kind == "missing":
        return "is required"
    if kind == "string_pattern_mismatch":
        return f"does not have the allowed form (it must match {ctx.get('pattern')})"
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if message.startswith("Input should be"):
        return "should be" + message.removeprefix("Input should be")
    return message


def _line_of(text: str, loc: list[str]) -> int | None:
    """Best-effort line of the key named by ``loc`` (TOML parsers keep no positions): the
    longest table header on its path, then the first line below it naming its last key."""
    keys = [key for key in loc if not key.isdigit()]
    if not keys:
        return None
    lines = split_lines(text)  # as TOML counts them, so the line named is the parser's
    start: int | None = None
    for size in range(len(keys), 0, -1):
        dotted = r"\s*\.\s*".join(rf'"?{re.escape(key)}"?' for key in keys[:size])
        header = re.compile(rf"^\s*\[\s*{dotted}\s*\]")
        hit = next((n for n, line in enumerate(lines) if header.match(line)), None)
        if hit is not None:
            if size == len(keys):
                return hit + 1
            start = hit
            break
    key = re.compile(rf'(?:^|[\s.{{,])"?{re.escape(keys[-1])}"?\s*(?:=|\.)')
    for number in range(start or 0, len(lines)):
        if key.search(lines[number]):
            return number + 1
    return None if start is None else start + 1  # a missing key: the table that lacks it


def _line_of_names(text: str, message: str) -> int | None:
    """For a problem across tables (an undeclared credential): the line holding the last
    quoted name the message mentions, as a value or a table name."""
    for name in reversed(re.findall(r"'([^']+)'", message)):
        pattern = re.compile(rf'=\s*"{re.escape(name)}"|\.{re.escape(name)}\s*\]')
        for number, line in enumerate(split_lines(text), start=1):
            if pattern.search(line):
                return number
    return None


def _check_placeholders(used: set[str], params: dict[str, ParamSpec], where: str) -> None:
    undeclared = used - set(params)
    if undeclared:
        raise ValueError(f"{where} uses undeclared params: {sorted(undeclared)}")
    unused = set(params) - used
    if unused:
        raise ValueError(f"params declared but never used in {where}: {sorted(unused)}")


def _json_placeholders(value: object) -> set[str]:
    if isinstance(value, str):
        return set(PLACEHOLDER.findall(value))
    if isinstance(value, dict):
        return set().union(*(_json_placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_json_placeholders(v) for v in value)) if value else set()
    return set()
