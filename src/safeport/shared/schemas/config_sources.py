"""The `[sources.openbao.NAME]` tables of gateway.toml: OpenBao or Vault servers declared once.

A credential names its source (``source = "vault"``, the local vault, is the default) and, for
a server, where the value lives there: a KV v2 path and field, an SSH role that signs a
certificate per action, or a database role. Those names come only from the accepted policy; no
proposal argument ever reaches a path or a role.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from safeport.shared.schemas.config_gateway import PolicyTable as _Strict

LOCAL_SOURCE = "vault"
# A path segment or a role name at OpenBao: plain words, no `..`, no query, no template.
BaoName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")]
BaoPath = Annotated[
    str,
    Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,127}){0,15}$"),
]


class OpenBaoAuth(_Strict):
    method: Literal["approle", "token-file"]
    """"approle" (role id here, secret id in the local vault) or "token-file"."""
    mount: BaoPath = "approle"
    """Where the AppRole auth method is mounted (with `method = "approle"`)."""
    role_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,128}$")] | None = None
    """The AppRole's role id (not a secret: the secret id is)."""
    secret_id_credential: BaoName | None = None
    """The local vault's token credential holding the AppRole's secret id."""
    token_file: str | None = None
    """A file only the gateway's account can read holding a token (with "token-file")."""

    @model_validator(mode="after")
    def _one_method(self) -> OpenBaoAuth:
        if self.method == "approle":
            if self.role_id is None or self.secret_id_credential is None:
                raise ValueError('`method = "approle"` needs `role_id` and `secret_id_credential`')
            if self.token_file is not None:
                raise ValueError('`token_file` is only for `method = "token-file"`')
        elif self.token_file is None or not self.token_file.startswith("/"):
            raise ValueError('`method = "token-file"` needs `token_file`, an absolute path')
        elif self.role_id is not None or self.secret_id_credential is not None:
            raise ValueError('`role_id`/`secret_id_credential` are only for `method = "approle"`')
        return self


class OpenBaoServer(_Strict):
    address: str
    """The server's https:// URL (scheme, host and port only)."""
    ca_file: str
    """The PEM file of the CA the server's certificate must chain to (the pin; no system roots)."""
    namespace: BaoPath | None = None
    """The namespace every request is made in (unset: the root namespace)."""
    auth: OpenBaoAuth
    """How the gateway logs in."""
    timeout_s: Annotated[int, Field(ge=1, le=60)] = 5
    """Seconds any one request to the server may take before the proposal is refused."""

    @model_validator(mode="after")
    def _https_origin(self) -> OpenBaoServer:
        parts = urlsplit(self.address)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("`address` must be an https:// URL with a host")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError("`address` is scheme, host and port only")
        if not self.ca_file.startswith("/"):
            raise ValueError("`ca_file` must be an absolute path")
        return self


class SourcesSection(_Strict):
    openbao: dict[BaoName, OpenBaoServer] = Field(default_factory=dict)
    """OpenBao (or Vault) servers, by name; a credential names one as its `source`."""


class CredentialOrigin(_Strict):
    """Where a credential's value lives, when it is not the local vault (fields of a credential)."""

    source: BaoName = LOCAL_SOURCE
    """"vault" (the local vault) or the name of a `[sources.openbao.NAME]` server."""
    kv_mount: BaoPath = "secret"
    """The KV v2 mount a token or basic credential is read from."""
    kv_path: BaoPath | None = None
    """The secret's path in that mount (a token or basic credential from a server)."""
    kv_field: BaoName | None = None
    """The field holding the token (or, for basic, the password)."""
    kv_username_field: BaoName | None = None
    """For a basic credential: the field holding the user name."""
    ssh_mount: BaoPath = "ssh"
    """The SSH secrets engine's mount that signs per-action certificates."""
    ssh_role: BaoName | None = None
    """The SSH role that signs a fresh key per action (an ssh-key credential from a server)."""
    database_mount: BaoPath = "database"
    """The database secrets engine's mount that issues a role per query."""
    database_role: BaoName | None = None
    """The database role whose credentials are issued per query (a basic credential)."""
    ttl_s: Annotated[int, Field(ge=10, le=3600)] = 60
    """How long a certificate or a lease issued for one action lives, in seconds."""


def check_origin(name: str, kind: str, origin: CredentialOrigin, sources: SourcesSection) -> None:
    """Raise ``ValueError`` unless ``origin`` fits its credential's ``kind`` and source."""
    bao_fields = {
        "kv_path": origin.kv_path,
        "kv_field": origin.kv_field,
        "kv_username_field": origin.kv_username_field,
        "ssh_role": origin.ssh_role,
        "database_role": origin.database_role,
    }
    if origin.source == LOCAL_SOURCE:
        given = sorted(key for key, value in bao_fields.items() if value is not None)
        if given:
            raise ValueError(f"credential {name!r} is in the local vault; {given} need a server")
        return
    if origin.source not in sources.openbao:
        raise ValueError(f"credential {name!r} names undeclared source {origin.source!r}")
    kv = ["kv_path", "kv_field", "kv_username_field"]
    if kind == "ssh-key":
        wanted, unwanted = ["ssh_role"], [*kv, "database_role"]
    elif kind == "basic" and origin.database_role is not None:
        wanted, unwanted = ["database_role"], [*kv, "ssh_role"]
    elif kind == "basic":
        wanted, unwanted = kv, ["ssh_role", "database_role"]
    else:
        wanted, unwanted = (
            ["kv_path", "kv_field"],
            ["ssh_role", "kv_username_field", "database_role"],
        )
    missing = [key for key in wanted if bao_fields[key] is None]
    if missing:
        raise ValueError(f"credential {name!r} ({kind} from {origin.source!r}) needs {missing}")
    extra = [key for key in unwanted if bao_fields[key] is not None]
    if extra:
        raise ValueError(f"credential {name!r} ({kind}) does not take {extra}")


def check_sources(credentials: dict[str, tuple[str, str]], sources: SourcesSection) -> None:
    """Every AppRole's secret id is a token credential kept in the local vault.

    ``credentials``: name -> (kind, source) of every declared credential."""
    if LOCAL_SOURCE in sources.openbao:
        raise ValueError(f"a server cannot be named {LOCAL_SOURCE!r} (the local vault's name)")
    for server_id, server in sources.openbao.items():
        ref = server.auth.secret_id_credential
        if ref is None:
            continue
        kind_source = credentials.get(ref)
        if kind_source != ("token", LOCAL_SOURCE):
            raise ValueError(
                f"source {server_id!r}: secret_id_credential {ref!r} must be a token credential "
                "declared under [credentials] and kept in the local vault"
            )
