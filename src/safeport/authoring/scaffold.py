"""`sp policy add http|ssh`: a service or host appended to gateway.toml as commented TOML.

What is scaffolded is a start to narrow, never wider than it must be: every `{param}` gets a
conservative pattern (letters, digits, `_ . -`, at most 64), a GET or HEAD is marked read-only
and approved once per session, anything else asks on every call. The text with the new table
must parse before it is written, so `sp policy add` never leaves a broken file behind.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from safeport.authoring.oauth_scaffold import OAuthDraft, oauth_credential_lines
from safeport.authoring.toml_keys import checked_name, table_key
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.schemas.config_params import PLACEHOLDER

SAFE_VALUE = "^[A-Za-z0-9_.-]{1,64}$"
_SPEC = re.compile(r"^(?P<id>[A-Za-z0-9][A-Za-z0-9_.-]{0,63})=(?P<rest>.+)$", re.S)
_READS = ("GET", "HEAD")


@dataclass(frozen=True)
class HttpServiceDraft:
    name: str
    base_url: str
    credential: str
    operations: tuple[str, ...]  # "ID=METHOD /path"
    oauth: OAuthDraft | None = None  # the credential is an oauth grant from a preset


@dataclass(frozen=True)
class SshHostDraft:
    name: str
    address: str
    user: str
    host_key: str
    credential: str
    port: int = 22
    commands: tuple[str, ...] = ()  # "ID=argv words"


def add_http_service(text: str, draft: HttpServiceDraft) -> str:
    """``text`` with the service (and its credential, when new) appended; checked to parse."""
    service = table_key(checked_name(draft.name, "the service name"))
    checked_name(draft.credential, "--credential")
    if draft.oauth is None:
        lines = _credential(text, draft.credential, "token", "--kind token")
        auths = "bearer | basic | header:NAME"
    else:
        lines = oauth_credential_lines(text, draft.credential, draft.oauth)
        auths = "bearer | header:NAME (an access token is never basic)"
    lines += [
        f"[http.services.{service}]",
        f"base_url = {json.dumps(draft.base_url)}",
        f"credential = {json.dumps(draft.credential)}",
        f'auth = "bearer"                  # {auths}',
        "",
    ]
    for spec in draft.operations:
        operation_id, rest = _split(spec, "--operation", "ID=METHOD /path")
        method, _, path = rest.strip().partition(" ")
        method = method.upper()
        lines += [
            f"[http.services.{service}.operations.{table_key(operation_id)}]",
            f"method = {json.dumps(method)}",
            f"path = {json.dumps(path.strip())}",
        ]
        if method in _READS:
            lines += [
                "read_only = true",
                'approval = "session"           # reads: one card a session',
            ]
        else:
            lines += ["# a write: approved on every call (the credential's default)"]
        lines += ["response_fields = []             # list the answer's fields the agent may see"]
        lines += [*_params(path), ""]
    return _appended(text, lines)


def add_ssh_host(text: str, draft: SshHostDraft) -> str:
    """``text`` with the host (and its credential, when new) appended; checked to parse."""
    host = table_key(checked_name(draft.name, "the host name"))
    checked_name(draft.credential, "--credential")
    hint = "--kind ssh-key --value-file KEY"
    lines = _credential(text, draft.credential, "ssh-key", hint)
    lines += [
        f"[ssh.hosts.{host}]",
        f"address = {json.dumps(draft.address)}",
        f"port = {draft.port}",
        f"user = {json.dumps(draft.user)}",
        f"host_keys = [{json.dumps(draft.host_key)}]   # check it out of band",
        f"credential = {json.dumps(draft.credential)}",
        "",
    ]
    for spec in draft.commands:
        command_id, rest = _split(spec, "--command", "ID=argv words")
        argv = shlex.split(rest)
        lines += [
            f"[ssh.hosts.{host}.commands.{table_key(command_id)}]",
            f"argv = {json.dumps(argv)}",
            "# approved on every call; a command that only reads may add",
            '# read_only = true and approval = "session"',
            *_params(" ".join(argv)),
            "",
        ]
    return _appended(text, lines)


def _credential(text: str, name: str, kind: str, hint: str) -> list[str]:
    declared = re.search(rf"^\s*\[\s*credentials\.\"?{re.escape(name)}\"?\s*\]", text, re.M)
    if declared:
        return []
    return [
        f"[credentials.{table_key(name)}]   # its value: `sp vault add {name} {hint}`",
        f'kind = "{kind}"',
        "",
    ]


def _params(template: str) -> list[str]:
    names = dict.fromkeys(PLACEHOLDER.findall(template))
    return [
        f"params.{name} = {{ pattern = {json.dumps(SAFE_VALUE)} }}   # narrow me" for name in names
    ]


def _split(spec: str, flag: str, form: str) -> tuple[str, str]:
    match = _SPEC.match(spec)
    if match is None or not match["rest"].strip():
        raise ConfigError(f"{flag} {spec!r} is not {form}")
    return match["id"], match["rest"]


def _appended(text: str, lines: list[str]) -> str:
    updated = text.rstrip("\n") + "\n\n" + "\n".join(lines).rstrip("\n") + "\n"
    parse_gateway_policy(updated)  # raises ConfigError naming the key: nothing is written
    return updated
