"""Which way each field of gateway.toml loosens the policy: the table the diff of meaning reads.

Every field is named here by its place in the schema, never by its name alone: ``max`` is a
param's upper bound under ``params`` and whatever a remote API makes of it inside a
``json_body``, so a field's direction is only known where the schema puts it. A field whose
direction cannot be computed from two values (a regular expression, an argv, a host address,
a base URL) is ``"any"``: every change to it is said as a loosening, because a reader cannot
tell a narrower pattern from a wider one at a glance and a wrong "changed" is the one label
that lets a widening through. Only text that decides nothing (``description``) is said as
merely changed. A field added to the schema without an entry here is said as loosening too,
and a test lists every field so each new one gets a decision.
"""

from __future__ import annotations

from types import NoneType, UnionType
from typing import Literal, Union, get_args, get_origin

from pydantic import BaseModel

from safeport.shared.schemas.config import GatewayPolicy

Path = tuple[str, ...]
# "bigger"/"smaller": the larger/smaller number allows more (None = no bound at all);
# "true": True allows more; "more": items added to the list allow more; "any": no direction
# can be computed, so any change may allow more; "words": decides nothing; "rule": said by a
# sentence of its own in policy/meaning_rules.py.
# "factor": "key" (or True) proves more than the passphrase, so turning it off loosens.
Direction = Literal["bigger", "smaller", "true", "more", "any", "words", "rule", "factor"]

_PARAM: dict[Path, Direction] = {
    ("pattern",): "any",
    ("enum",): "more",
    ("type",): "any",
    ("min",): "smaller",
    ("max",): "bigger",
    ("max_length",): "bigger",
}
_COMMAND: dict[Path, Direction] = {
    ("argv",): "any",
    ("description",): "words",
    ("timeout_s",): "bigger",
    ("max_output_bytes",): "bigger",
    # Advertised to the agent as safe to call; the gateway does not enforce it.
    ("read_only",): "true",
    ("approval",): "rule",
    ("allow_leading_dash",): "more",
    ("params",): "any",
    ("params", "*"): "any",
    **{("params", "*", *key): value for key, value in _PARAM.items()},
}
_OPERATION: dict[Path, Direction] = {
    ("method",): "any",
    ("path",): "any",
    ("query",): "any",
    ("query", "*"): "any",
    ("headers",): "any",
    ("headers", "*"): "any",
    ("json_body",): "rule",  # compared whole: its keys are the remote API's, not ours
    ("response_fields",): "more",
    ("description",): "words",
    ("read_only",): "true",
    ("approval",): "rule",
    ("params",): "any",
    ("params", "*"): "any",
    **{("params", "*", *key): value for key, value in _PARAM.items()},
}
_HOST: dict[Path, Direction] = {
    ("address",): "any",
    ("port",): "any",
    ("user",): "any",
    ("host_keys",): "more",
    ("credential",): "rule",
    ("connect_timeout_s",): "bigger",
    ("commands",): "any",
    ("commands", "*"): "rule",
    **{("commands", "*", *key): value for key, value in _COMMAND.items()},
}
_SERVICE: dict[Path, Direction] = {
    ("base_url",): "any",
    ("credential",): "rule",
    ("auth",): "any",
    ("ca_file",): "any",
    ("ca_pem",): "any",
    ("allow_private_addresses",): "true",
    ("timeout_s",): "bigger",
    ("max_response_bytes",): "bigger",
    ("operations",): "any",
    ("operations", "*"): "rule",
    **{("operations", "*", *key): value for key, value in _OPERATION.items()},
}
_ORIGIN: tuple[str, ...] = ("source", "kv_mount", "kv_path", "kv_field", "kv_username_field")
_ORIGIN += ("ssh_mount", "ssh_role", "database_mount", "database_role")
# A server's address, pin and login decide whose credentials the gateway holds: no direction.
_OPENBAO: dict[Path, Direction] = {
    ("address",): "any",
    ("ca_file",): "any",
    ("namespace",): "any",
    ("auth",): "any",
    **{("auth", key): "any" for key in ("method", "mount", "role_id", "token_file")},
    ("auth", "secret_id_credential"): "any",
    ("timeout_s",): "bigger",
}
_QUERY: dict[Path, Direction] = {
    ("statement",): "any",
    ("description",): "words",
    ("columns",): "more",
    ("max_rows",): "bigger",
    ("max_bytes",): "bigger",
    ("timeout_s",): "bigger",
    ("approval",): "rule",
    ("params",): "any",
    ("params", "*"): "any",
    **{("params", "*", *key): value for key, value in _PARAM.items()},
}
_DATABASE: dict[Path, Direction] = {
    ("host",): "any",
    ("port",): "any",
    ("database",): "any",
    ("user",): "any",
    ("credential",): "rule",
    ("ca_pem",): "any",
    ("client_cert_pem",): "any",
    ("connect_timeout_s",): "bigger",
    # Words that let a role hold more than least privilege: any change may allow more.
    ("allow_write_privileges",): "any",
    ("allow_superuser",): "any",
    ("queries",): "any",
    ("queries", "*"): "rule",
    **{("queries", "*", *key): value for key, value in _QUERY.items()},
}
# An OAuth grant: another authorization server, endpoint, client or CA decides to whom the
# refresh token goes (no direction); more scopes let the grant do more.
_OAUTH: dict[Path, Direction] = {
    **{(key,): "any" for key in ("preset", "issuer", "client_id", "client_auth", "ca_file")},
    ("authorization_endpoint",): "any",
    ("token_endpoint",): "any",
    ("device_authorization_endpoint",): "any",
    ("revocation_endpoint",): "any",
    ("scopes",): "more",
    ("allow_private_addresses",): "true",
    ("timeout_s",): "bigger",
    ("max_response_bytes",): "bigger",
}
DIRECTIONS: dict[Path, Direction] = {
    ("gateway",): "any",
    ("gateway", "approval_timeout_s"): "bigger",
    ("gateway", "auto_lock_minutes"): "rule",
    ("gateway", "session_max_minutes"): "bigger",
    ("gateway", "max_connections"): "bigger",
    ("gateway", "allow_approver_in_client"): "true",
    ("gateway", "syslog"): "rule",
    ("remote",): "any",
    ("remote", "actions"): "true",
    ("remote", "access_token_minutes"): "bigger",
    ("approvals",): "any",
    ("approvals", "approval_factor"): "factor",
    ("approvals", "user_verification"): "factor",
    ("credentials", "*", "approval_factor"): "factor",
    ("callers",): "rule",
    ("callers", "rules"): "rule",
    ("credentials",): "any",
    ("credentials", "*"): "rule",
    ("credentials", "*", "kind"): "any",
    ("credentials", "*", "approval"): "rule",
    ("credentials", "*", "rate_per_minute"): "rule",
    # Where the value comes from: another server, path or role is another credential.
    **{("credentials", "*", key): "any" for key in _ORIGIN},
    ("credentials", "*", "ttl_s"): "bigger",
    ("credentials", "*", "oauth"): "any",
    **{("credentials", "*", "oauth", *key): value for key, value in _OAUTH.items()},
    ("sources",): "any",
    ("sources", "openbao"): "any",
    ("sources", "openbao", "*"): "any",
    **{("sources", "openbao", "*", *key): value for key, value in _OPENBAO.items()},
    ("ssh",): "any",
    ("ssh", "hosts"): "any",
    ("ssh", "hosts", "*"): "rule",
    **{("ssh", "hosts", "*", *key): value for key, value in _HOST.items()},
    ("http",): "any",
    ("http", "services"): "any",
    ("http", "services", "*"): "rule",
    **{("http", "services", "*", *key): value for key, value in _SERVICE.items()},
    # Evidence off the machine: another authority or root is another witness, and a timeout
    # too short to be answered stops stamping as surely as removing it; a later stale warning
    # lets an unstamped history wait longer.
    ("audit",): "any",
    ("audit", "timestamp"): "any",
    ("audit", "timestamp", "tsa"): "any",
    ("audit", "timestamp", "timeout_s"): "any",
    ("audit", "timestamp", "stale_after_minutes"): "bigger",
    ("sql",): "any",
    ("sql", "databases"): "any",
    ("sql", "databases", "*"): "rule",
    **{("sql", "databases", "*", *key): value for key, value in _DATABASE.items()},
}

# Names of the schema's dicts whose keys are the policy author's (hosts, params, headers…).
_KEYED = frozenset({"credentials", "hosts", "commands", "services", "operations", "params"})
_KEYED |= {"query", "headers", "openbao", "databases", "queries"}


def direction(path: Path) -> Direction:
    """The direction of the field at ``path`` (dict keys in it as they are in the policy)."""
    return DIRECTIONS.get(pattern_of(path), "any")


def pattern_of(path: Path) -> Path:
    """``path`` with each author-chosen key (a host's name, a param's) written as ``*``."""
    out: list[str] = []
    for index, part in enumerate(path):
        keyed = index > 0 and path[index - 1] in _KEYED and out[-1] != "*"
        out.append("*" if keyed else part)
    return tuple(out)


def undeclared_fields() -> list[Path]:
    """Every place in the schema with no entry in :data:`DIRECTIONS` (a test keeps it empty)."""
    return [path for path in _schema_paths(GatewayPolicy, ()) if path not in DIRECTIONS]


def _schema_paths(model: type[BaseModel], prefix: Path) -> list[Path]:
    paths: list[Path] = []
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        paths.append(path)
        inner = _model_in(field.annotation)
        if inner is not None:
            keyed = _is_dict(field.annotation)
            paths.extend(_schema_paths(inner, (*path, "*") if keyed else path))
            if keyed:
                paths.append((*path, "*"))
        elif _is_dict(field.annotation) and name in _KEYED:
            paths.append((*path, "*"))
    return paths


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Union, UnionType, dict):
        for arg in get_args(annotation):
            if arg is not NoneType and (found := _model_in(arg)) is not None:
                return found
    return None


def _is_dict(annotation: object) -> bool:
    return get_origin(annotation) is dict
