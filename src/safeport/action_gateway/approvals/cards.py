"""What a human is asked to approve: the action request and its card, rendered inert (§8).

Everything the agent chose (argument values, and anything derived from them: the rendered argv,
the URL) is shown as plain text with control, ANSI, bidi and other invisible characters escaped,
so a value cannot restyle a terminal, hide part of itself or fake a second line. A field that
cannot be shown whole makes the card unshowable, and an unshowable card cannot be approved.

A card's fields are typed :data:`~safeport.shared.visible_text.Inert`, so none can be built from
a string that skipped the escaping, and :meth:`ApprovalCard.view` (what every client -- the
terminal, ``--json``, the approval page -- receives) escapes each of its other texts itself: a
remote client's name is the ``target`` of its card, and it is as much the requester's text as
any field.
"""

from __future__ import annotations

import hashlib
import json
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from safeport.action_gateway.executors.interface import HttpAction, SqlAction, SshAction
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.shared.audit import JournalBody
from safeport.shared.schemas.results import CardView, ProcessLine, RequesterUser
from safeport.shared.visible_text import Inert, checked_inert, inert, inert_lines

ActionKind = Literal["ssh_exec", "http_request", "run_readonly_query"]
CardKind = Literal["ssh_exec", "http_request", "run_readonly_query", "oauth_client"]
ApprovalScope = Literal["session", "per-call"]
MAX_FIELD_CHARS = 8192


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
    prepared: (
        SshAction | HttpAction | SqlAction
    )  # the one rendering: the card shows it, the executor runs it
    # For a session card: every `target.operation` the session lets this process run unasked.
    session_covers: tuple[str, ...] = ()
    # A remote client's name and id, proven by its access token: named on the card.
    remote_client: str | None = None
    # Where the credential comes from when not the local vault: server, path or role, TTL.
    credential_origin: str = ""
    # An OAuth grant's card line: "acts as NAME with scopes …" (the scopes it was granted).
    grant_line: str = ""

    @property
    def args_digest(self) -> str:
        canonical = json.dumps(dict(self.args), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def shape(self) -> JournalBody:
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
            "prepared_sha256": self.prepared.digest(),
            "policy": self.policy_digest,
            **({"remote_client": self.remote_client} if self.remote_client else {}),
        }


@dataclass(frozen=True)
class ClientAuthorization:
    """A remote client asking for tokens (the desktop tunnel): what the human approves."""

    request_id: str
    client_id: str
    client_name: str
    metadata_from: str  # the metadata document's host, or "registered here"
    redirect_host: str
    roots: tuple[str, ...]
    profile: str
    token_minutes: int
    user_code: str
    # Each root's directory, as the context server says, in the order of ``roots`` ("" unknown).
    root_dirs: tuple[str, ...] = ()
    asked_profile: str = ""  # what the client asked for, when more than ``profile``
    kind: CardKind = "oauth_client"
    scope: ApprovalScope = "per-call"
    credential: str = "the token signing key"
    operation_id: str = "authorize"
    read_only: bool = True

    @property
    def target_id(self) -> str:
        return self.client_name

    def fields(self) -> tuple[tuple[str, Inert], ...]:
        return (
            ("client", inert(self.client_name)),
            ("client id", inert(self.client_id)),
            ("metadata", inert(self.metadata_from)),
            ("redirect", inert(self.redirect_host)),
            ("roots", inert(", ".join(self._root_lines()))),
            ("profile", inert(self._profile_line())),
            ("tokens", checked_inert(f"access {self.token_minutes} min, refreshed until revoked")),
            ("code", inert(self.user_code)),
            ("note", checked_inert("the browser page shows this code; approve only if they match")),
            (
                "later",
                checked_inert("the client refreshes its tokens without a card until revoked"),
            ),
        )

    def _profile_line(self) -> str:
        if self.asked_profile and self.asked_profile != self.profile:
            return (
                f"{self.profile} (asked for {self.asked_profile}: remote actions are off, so "
                "this grant reads only; once they are on, the client asks again)"
            )
        return self.profile

    def _root_lines(self) -> list[str]:
        """A root as a person knows it: its name and its directory (the identity's digest
        of the directory says nothing to a person; it is shown only when no directory came)."""
        lines = []
        for index, root in enumerate(self.roots):
            directory = self.root_dirs[index] if index < len(self.root_dirs) else ""
            name = root.rpartition("~")[0] or root
            lines.append(f"{name} ({directory})" if directory else root)
        return lines

    def shape(self) -> JournalBody:
        return {
            "request_id": self.request_id,
            "action": self.kind,
            "client": self.client_id,
            "roots": list(self.roots),
            "profile": self.profile,
        }


@dataclass(frozen=True)
class ApprovalCard:
    """One pending question for a human."""

    id: str
    requester: PeerIdentity
    request: ActionRequest | ClientAuthorization
    created_at: float
    expires_at: float
    session_max_s: float = 0.0
    fields: tuple[tuple[str, Inert], ...] = field(default=())
    showable: bool = True
    # Wall-clock expiry, whole seconds: what a security key's challenge binds (the monotonic
    # ``expires_at`` means nothing outside this process).
    expires_unix: int = 0

    @property
    def requester_sha256(self) -> str:
        """A digest of who asks, as the card shows it: bound into a key's challenge."""
        record = json.dumps(self.requester.as_record(), sort_keys=True, default=str)
        return hashlib.sha256(record.encode("utf-8")).hexdigest()

    def view(self, now: float) -> CardView:
        """The card as control clients receive it (every text already inert)."""
        client = self.requester.client()
        request = self.request
        return CardView(
            id=self.id,
            user=requester_user(self.requester.uid),
            scope=request.scope,
            scope_text=inert(scope_text(request, self.session_max_s)),
            credential=inert(request.credential),
            action=request.kind,
            target=inert(request.target_id),
            operation=inert(request.operation_id),
            read_only=request.read_only,
            effect=inert(_effect(request)),
            fields=[(label, text) for label, text in self.fields],
            showable=self.showable,
            requester=[_process_line(proc) for proc in self.requester.chain],
            client=_process_line(client) if client else None,
            client_label=next((inert(p.label) for p in self.requester.chain if p.label), None),
            expires_in_s=max(0, round(self.expires_at - now)),
            timeout_s=round(self.expires_at - self.created_at),
            prepared_sha256=_what_runs_sha256(request),
            requester_sha256=self.requester_sha256,
            expires_unix=self.expires_unix,
        )


def _what_runs_sha256(request: ActionRequest | ClientAuthorization) -> str:
    """What a key's touch approves: the prepared action, or every field a client card shows."""
    if isinstance(request, ClientAuthorization):
        shown = json.dumps(request.fields(), ensure_ascii=True)
        return hashlib.sha256(shown.encode("utf-8")).hexdigest()
    return request.prepared.digest()


def _effect(request: ActionRequest | ClientAuthorization) -> str:
    if isinstance(request, ClientAuthorization):
        return f"a remote client may read these roots as {request.profile}"
    return "read-only" if request.read_only else "may change things"


def requester_user(uid: int) -> RequesterUser:
    """Which human asks: with several humans served, one must never approve another's proposal
    unknowingly. The name is the system's, for this uid, at the time the card is shown."""
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    return RequesterUser(uid=uid, name=inert(name) if name is not None else None)


def scope_text(request: ActionRequest | ClientAuthorization, session_max_s: float) -> str:
    """What a yes allows, in words."""
    if isinstance(request, ClientAuthorization):
        return "this client gets tokens for these roots until it or its tokens are revoked"
    if request.scope == "session":
        minutes = round(session_max_s / 60)
        covers = f" for {', '.join(request.session_covers)}" if request.session_covers else ""
        return (
            f"this client process may use {request.credential}{covers} without asking again "
            f"until it exits, at most {minutes} minutes; a new client process asks again"
        )
    return "this one request only"


def build_card(
    card_id: str,
    requester: PeerIdentity,
    request: ActionRequest,
    *,
    now: float,
    timeout_s: float,
    session_max_s: float = 0.0,
    wall_now: float = 0.0,
) -> ApprovalCard:
    """Render the prepared action's lines inert; a line too long to show makes the card
    unshowable (and so unapprovable) rather than cut."""
    lines = request.prepared.card_lines()
    fields = tuple(
        (
            line.label,
            checked_inert(line.text, lines=True) if line.json_text else inert_lines(line.text),
        )
        for line in lines
    )
    if request.credential_origin:
        fields += (("credential from", inert(request.credential_origin)),)
    if request.grant_line:
        fields += (("oauth grant", inert(request.grant_line)),)
    if request.args:
        # A run of spaces is hard to count on a terminal; the length of each argument the agent
        # chose tells "a  b" from "a   b" without counting.
        fields += (("lengths", checked_inert(argument_lengths(request.args))),)
    if request.remote_client is not None:
        fields += (("remote", inert(request.remote_client)),)
    if request.prepared.holds_non_ascii():
        # Escaping shows every invisible character; a Cyrillic a (U+0430) still looks Latin.
        note = checked_inert("holds non-ASCII characters: look-alike letters are possible")
        fields += (("note", note),)
    showable = all(len(text) <= MAX_FIELD_CHARS for _, text in fields)
    return ApprovalCard(
        id=card_id,
        requester=requester,
        request=request,
        created_at=now,
        expires_at=now + timeout_s,
        session_max_s=session_max_s,
        fields=fields,
        showable=showable,
        expires_unix=int(wall_now + timeout_s) if wall_now else 0,
    )


def build_client_card(
    card_id: str,
    requester: PeerIdentity,
    request: ClientAuthorization,
    *,
    now: float,
    timeout_s: float,
    wall_now: float = 0.0,
) -> ApprovalCard:
    fields = request.fields()
    return ApprovalCard(
        id=card_id,
        requester=requester,
        request=request,
        created_at=now,
        expires_at=now + timeout_s,
        fields=fields,
        showable=all(len(text) <= MAX_FIELD_CHARS for _, text in fields),
        expires_unix=int(wall_now + timeout_s) if wall_now else 0,
    )


def argument_lengths(args: Mapping[str, str | int]) -> str:
    """Each argument's name and its length in characters, in name order."""
    return ", ".join(
        f"{inert(name)} {len(str(value))} character{'s' if len(str(value)) != 1 else ''}"
        for name, value in sorted(args.items())
    )


def _process_line(proc: object) -> ProcessLine:
    """One process of the chain: its digest and what vouches for it (said once), the script
    only for an interpreter — marked as the process's claim, with what the file at that path
    is, never "matches" — and any variable in its environment that injects code."""
    from safeport.action_gateway.identity.model import ProcessInfo, describe_claimed_script

    assert isinstance(proc, ProcessInfo)
    line: dict[str, object] = {
        "pid": proc.pid,
        "exe": inert(proc.exe),
        "sha256": proc.exe_sha256,
        "signature": proc.signature,
        "verified": inert(proc.signature_text()),
    }
    if proc.team_id:
        line["team_id"] = inert(proc.team_id)
    if proc.interpreter:
        line["interpreter"] = True
        line["script"] = inert(proc.script) if proc.script else None
        line["script_claimed"] = True
        line["script_sha256"] = proc.script_sha256
        if proc.script_signature is not None:
            line["script_verified"] = inert(
                describe_claimed_script(proc.script_signature, proc.script_origin)
            )
        if proc.script_changed:
            line["script_changed"] = True
    if proc.environ == "unreadable":
        line["environ"] = "unreadable"
    if proc.injected_env:
        line["injected_env"] = [[inert(name), inert(value)] for name, value in proc.injected_env]
    return ProcessLine.model_validate(line)
