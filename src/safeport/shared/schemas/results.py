"""Results on control.sock: one model per operation, beside the requests in :mod:`.control`.

The gateway's handlers return these models and `sp` parses every ``ok`` reply into the model of
the operation it asked for (:mod:`.operations` pairs the two), so a reply that does not match is
refused whole instead of read in part. Field names are the wire's: the models describe the
replies the gateway has always sent.

A few keys are sent only when they say something (a process line's ``team_id``, the public
file's state after an unlock): :class:`Result` leaves out those of its ``_ABSENT_WHEN_NONE``
that are ``None``, so the bytes on the wire are those of before.

The vault's results are in :mod:`.results_vault`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from safeport.shared.schemas.key_wire import KeyRequest

VaultState = Literal["locked", "unlocked"]


class Result(BaseModel):
    """What every result shares: no key the contract does not name, and no defaults except for
    the keys that may be absent, so a reply missing a key is refused rather than filled in."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    _ABSENT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for key in self._ABSENT_WHEN_NONE:
                if data.get(key, 0) is None:
                    del data[key]
        return data


# -- the gateway and its policy --------------------------------------------------------------


class PolicyState(Result):
    """Which policy is served and what gateway.toml on disk holds (``gateway.reload`` too)."""

    served: str | None
    file: str | None
    file_error: str | None
    pending: bool


class PolicySnapshot(PolicyState):
    """``policy.status``: the state with both texts, from one read of the file."""

    served_text: str | None
    file_text: str | None


class JournalHeadView(Result):
    seq: int
    hash: str


class JournalSpace(Result):
    """The disk under the journals (``free_bytes`` -1: it cannot be asked), and the refusals
    only counted since their requester's uid spent its journal budget."""

    free_bytes: int
    reserve_bytes: int
    low: bool
    refusals_counted: int


class Alarm(Result):
    """An alarm the gateway raised about its own evidence; its body depends on its kind."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str
    at: float


class TimestampState(Result):
    """The checkpoints' RFC 3161 time stamps: the last stamped, and each authority's fault."""

    last_stamped_at: str | None
    stale_after_s: int
    stale: bool
    faults: list[str]


class DeadGrantView(Result):
    """An OAuth grant its provider refused (`sp status`, `sp doctor`): reconnect it."""

    name: str
    issuer: str | None
    since: str
    reason: str


class StatusResult(Result):
    _ABSENT_WHEN_NONE = frozenset({"timestamps", "dead_grants"})

    pid: int
    account: str | None
    uptime_s: int
    # This run of the gateway (new at each start) and its vault's epoch (moved by each lock and
    # unlock): an approver names it to unlock on registering (``approver.register``'s
    # ``unlock_run``), so one from an earlier run, or from before a lock, cannot.
    run: str
    vault: VaultState
    policy: PolicyState
    sessions: int
    pending_cards: int
    journals: dict[str, JournalHeadView]
    alarms: list[Alarm]
    journal_space: JournalSpace
    timestamps: TimestampState | None = None  # absent when no time-stamping authority is set
    # OAuth grants refused by their providers since the gateway started (absent when none).
    dead_grants: list[DeadGrantView] | None = None


class SourceCheck(Result):
    name: str
    ok: bool
    detail: str
    fix: str


class SourcesCheckResult(Result):
    """``sources.check``: one line per server and per credential it serves."""

    checks: list[SourceCheck]


class StoppingResult(Result):
    stopping: Literal[True]


class PolicyAcceptedResult(Result):
    policy: str


class SignedHead(Result):
    _ABSENT_WHEN_NONE = frozenset({"note"})

    journal: str
    seq: int
    hash: str
    signed_at: str
    signer: str
    signature: str
    note: str | None = None  # the C2SP signed-note form of the same head


class CheckpointResult(Result):
    """``audit.checkpoint``: the latest signed heads, in the format of checkpoint.json."""

    format: str
    version: int
    checkpoints: list[SignedHead]


# -- approvals and sessions ------------------------------------------------------------------


class RequesterUser(Result):
    uid: int
    name: str | None


class ProcessLine(Result):
    """One process of a requester's chain, every text already inert; the script keys only for
    an interpreter, the others only when they say something."""

    _ABSENT_WHEN_NONE = frozenset(
        {
            "team_id",
            "interpreter",
            "script",
            "script_claimed",
            "script_sha256",
            "script_verified",
            "script_changed",
            "environ",
            "injected_env",
        }
    )

    pid: int
    exe: str
    sha256: str | None
    signature: str
    verified: str
    team_id: str | None = None
    interpreter: Literal[True] | None = None
    script: str | None = None
    script_claimed: Literal[True] | None = None
    script_sha256: str | None = None
    script_verified: str | None = None
    script_changed: Literal[True] | None = None
    environ: Literal["unreadable"] | None = None
    injected_env: list[tuple[str, str]] | None = None


class CardView(Result):
    """One approval card as an approver is shown it."""

    id: str
    user: RequesterUser
    scope: Literal["session", "per-call"]
    scope_text: str
    credential: str
    action: Literal["ssh_exec", "http_request", "run_readonly_query", "oauth_client"]
    target: str
    operation: str
    read_only: bool
    effect: str
    fields: list[tuple[str, str]]
    showable: bool
    requester: list[ProcessLine]
    client: ProcessLine | None
    client_label: str | None  # the label its MCP client's entry gives the context server
    expires_in_s: int
    timeout_s: int
    prepared_sha256: str
    requester_sha256: str
    expires_unix: int
    key: KeyRequest | None = None  # set when a yes needs a touch of an enrolled security key

    _ABSENT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"key"})


class ApproverResult(Result):
    approver: Literal[True]


class CardsResult(Result):
    cards: list[CardView]


class DecidedResult(Result):
    id: str
    approved: bool


class WatchingResult(Result):
    """``approvals.watch``: the cards already waiting; the later ones are pushed as events."""

    event: Literal["watching"]
    cards: list[CardView]


class CardOpened(CardView):
    """Pushed to a watching approver: a card to answer."""

    event: Literal["card"]


class CardClosed(Result):
    """Pushed to a watching approver: a card was answered, timed out or withdrawn."""

    event: Literal["card.closed"]
    id: str
    outcome: Literal["approved", "denied", "timeout", "cancelled", "voided", "unshowable"]


class CardOutcome(Result):
    """Pushed to a watching approver: what an approved card's action did once it ran."""

    event: Literal["card.outcome"]
    id: str
    outcome: Literal["done", "refused", "failed"]
    detail: str  # the status or exit code, or the reason it was refused or failed


ApprovalEvent = Annotated[CardOpened | CardClosed | CardOutcome, Field(discriminator="event")]
APPROVAL_EVENT: TypeAdapter[CardOpened | CardClosed | CardOutcome] = TypeAdapter(ApprovalEvent)


class SessionView(Result):
    id: str
    credential: str
    requester_pid: int
    requester_exe: str
    policy: str
    age_s: int
    expires_in_s: int


class SessionsResult(Result):
    sessions: list[SessionView]


class RevokedResult(Result):
    revoked: str


class ClientApprovalView(Result):
    roots: list[str]
    profile: str
    redirect_host: str


class RemoteClientView(Result):
    """A remote MCP client the gateway knows (`sp context clients list`)."""

    client_id: str
    name: str
    source: Literal["metadata-document", "registered"]
    redirect_hosts: list[str]
    approved: list[ClientApprovalView]
    revoked: bool
    last_used: float | None  # seconds since the epoch


class RemoteClientsResult(Result):
    clients: list[RemoteClientView]
