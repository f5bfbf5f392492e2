"""What a human is asked to approve: the action request and its card, rendered inert (§8).

Everything the agent chose (argument values, and anything derived from them: the rendered argv,
the URL) is shown as plain text with control, ANSI, bidi and other invisible characters escaped,
so a value cannot restyle a terminal, hide part of itself or fake a second line. A field that
cannot be shown whole makes the card unshowable, and an unshowable card cannot be approved.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote, urlencode

from safeport.action_gateway.identity import PeerIdentity
from safeport.shared.schemas.config import HttpOperation, HttpService, SshCommand, SshHost

ActionKind = Literal["ssh_exec", "http_request"]
ApprovalScope = Literal["session", "per-call"]
MAX_FIELD_CHARS = 2048


@dataclass(frozen=True)
class ActionRequest:
    """A proposal that passed rungs 1 to 4: named, validated, resolved against the policy."""

    request_id: str
    kind: ActionKind
    target_id: str
    operation_id: str
    credential: str
    scope: ApprovalScope
    args: Mapping[str, str | int]
    policy_digest: str
    read_only: bool
    rendered: tuple[tuple[str, str], ...] = ()  # (label, text) lines for the card

    @property
    def args_digest(self) -> str:
        canonical = json.dumps(dict(self.args), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def shape(self) -> dict[str, object]:
        """The journal form: names, argument shapes and a digest, never the values."""
        return {
            "request_id": self.request_id,
            "action": self.kind,
            "target": self.target_id,
            "operation": self.operation_id,
            "credential": self.credential,
            "scope": self.scope,
            "args": {
                name: {"type": type(value).__name__, "len": len(str(value))}
                for name, value in sorted(self.args.items())
            },
            "args_sha256": self.args_digest,
            "policy": self.policy_digest,
        }


@dataclass(frozen=True)
class ApprovalCard:
    """One pending question for a human."""

    id: str
    requester: PeerIdentity
    request: ActionRequest
    created_at: float
    expires_at: float
    fields: tuple[tuple[str, str], ...] = field(default=())
    showable: bool = True

    def view(self) -> dict[str, object]:
        """The card as control clients receive it (every text already inert)."""
        client = self.requester.client()
        return {
            "id": self.id,
            "scope": self.request.scope,
            "credential": self.request.credential,
            "action": self.request.kind,
            "target": self.request.target_id,
            "operation": self.request.operation_id,
            "read_only": self.request.read_only,
            "fields": [[label, text] for label, text in self.fields],
            "showable": self.showable,
            "requester": [_process_line(proc) for proc in self.requester.chain],
            "client": _process_line(client) if client else None,
            "expires_in_s": max(0, round(self.expires_at - self.created_at)),
        }


def build_card(
    card_id: str,
    requester: PeerIdentity,
    request: ActionRequest,
    *,
    now: float,
    timeout_s: float,
) -> ApprovalCard:
    fields = tuple((label, inert(text)) for label, text in request.rendered)
    showable = all(len(text) <= MAX_FIELD_CHARS for _, text in fields)
    return ApprovalCard(
        id=card_id,
        requester=requester,
        request=request,
        created_at=now,
        expires_at=now + timeout_s,
        fields=fields,
        showable=showable,
    )


def render_ssh(host: SshHost, command: SshCommand, args: Mapping[str, str | int]) -> str:
    """The full remote command line as the executor sends it (``shlex.join`` of the argv)."""
    return shlex.join(fill_template(part, args) for part in command.argv)


def render_http(
    service: HttpService, operation: HttpOperation, args: Mapping[str, str | int]
) -> str:
    """METHOD and the full URL, params encoded as single path segments."""
    path = fill_template(operation.path, args, encode=True)
    url = service.base_url.rstrip("/") + path
    if operation.query:
        query = {name: fill_template(value, args) for name, value in operation.query.items()}
        url += "?" + urlencode(query)
    return f"{operation.method} {url}"


def fill_template(template: str, args: Mapping[str, str | int], *, encode: bool = False) -> str:
    out = template
    for name, value in args.items():
        text = str(value)
        out = out.replace("{" + name + "}", quote(text, safe="") if encode else text)
    return out


def inert(text: str) -> str:
    """Escape everything that is not a visible character (and the backslash itself)."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == " " or char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


def _process_line(proc: object) -> dict[str, object]:
    from safeport.action_gateway.identity import ProcessInfo

    assert isinstance(proc, ProcessInfo)
    line: dict[str, object] = {
        "pid": proc.pid,
        "exe": inert(proc.exe),
        "sha256": proc.exe_sha256,
        "signature": proc.signature,
    }
    if proc.team_id:
        line["team_id"] = inert(proc.team_id)
    if proc.interpreter:
        line["interpreter"] = True
        line["script"] = inert(proc.script) if proc.script else None
        line["script_sha256"] = proc.script_sha256
    return line
