"""Messages on agent.sock; control.sock's requests are in :mod:`.control`,
the replies of both in :mod:`.replies`, the catalog in :mod:`.catalog`.

Every request model forbids extra keys and uses strict types, so a proposal that carries
anything the contract does not name is ``invalid`` before policy even looks at it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter

# The envelope lives in its own module so that the OAuth messages (which build on it) can join
# the agent's union below without an import circle; its names stay importable from here.
from safeport.shared.schemas.envelope import Envelope as Envelope
from safeport.shared.schemas.envelope import RequestId as RequestId
from safeport.shared.schemas.oauth_wire import OAUTH_REQUESTS as OAUTH_REQUESTS
from safeport.shared.schemas.oauth_wire import (
    OAuthAuthorize,
    OAuthAuthorizeWait,
    OAuthCheck,
    OAuthKeys,
    OAuthMetadata,
    OAuthRegister,
    OAuthRevoke,
    OAuthToken,
)

PROTOCOL_VERSION = 1

Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
ArgName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
ArgValue = StrictStr | StrictInt
Args = Annotated[dict[ArgName, ArgValue], Field(max_length=32)]


class Hello(Envelope):
    type: Literal["hello"]
    versions: Annotated[list[StrictInt], Field(min_length=1, max_length=8)]
    client: Annotated[str, Field(max_length=64)] = "unknown"
    # Optional messages the client understands; "pending": PendingNotice while a card waits.
    features: Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=8)] = Field(
        default_factory=list
    )


class CatalogRequest(Envelope):
    type: Literal["catalog"]


# How long the requester can wait for a human (its MCP client gives up after that): the card
# expires no later, so the human sees the real deadline and the refusal reaches the client.
# It can only shorten the policy's approval_timeout_s, never lengthen it.
WaitLimit = Annotated[int, Field(ge=1, le=3600)] | None


class ProposeSsh(Envelope):
    type: Literal["propose"]
    action: Literal["ssh_exec"]
    host_id: Identifier
    command_id: Identifier
    args: Args = Field(default_factory=dict)
    # A remote client's access token (the desktop tunnel): the gateway verifies it, names the
    # client on the card and asks for every call; absent for local agents.
    remote_token: Annotated[str, Field(min_length=16, max_length=4096)] | None = None
    wait_s: WaitLimit = None


class ProposeHttp(Envelope):
    type: Literal["propose"]
    action: Literal["http_request"]
    service_id: Identifier
    operation_id: Identifier
    args: Args = Field(default_factory=dict)
    # A remote client's access token (the desktop tunnel): the gateway verifies it, names the
    # client on the card and asks for every call; absent for local agents.
    remote_token: Annotated[str, Field(min_length=16, max_length=4096)] | None = None
    wait_s: WaitLimit = None


class ProposeSql(Envelope):
    type: Literal["propose"]
    action: Literal["run_readonly_query"]
    database: Identifier
    query: Identifier
    params: Args = Field(default_factory=dict)
    remote_token: Annotated[str, Field(min_length=16, max_length=4096)] | None = None
    wait_s: WaitLimit = None


class Cancel(Envelope):
    type: Literal["cancel"]
    target: RequestId


AgentRequest = Annotated[
    Hello
    | CatalogRequest
    | ProposeSsh
    | ProposeHttp
    | ProposeSql
    | Cancel
    # A remote client's OAuth, relayed by the context server (the gateway is its server).
    | OAuthKeys
    | OAuthMetadata
    | OAuthRegister
    | OAuthAuthorize
    | OAuthAuthorizeWait
    | OAuthToken
    | OAuthRevoke
    | OAuthCheck,
    Field(union_mode="left_to_right"),
]
AGENT_REQUEST: TypeAdapter[AgentRequest] = TypeAdapter(AgentRequest)


class HelloResult(BaseModel):
    """The answer to ``hello``: the protocol version both speak."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    server: str


class CancelResult(BaseModel):
    """The answer to ``cancel``: whether a proposal was still waiting to be withdrawn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cancelled: bool


class ResultRedaction(BaseModel):
    """A secret the gateway withheld from an action's result: where it was and its kind, never
    its value."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(
        description="`stdout`, `stderr`, or the response field's path (`config.token`, `items.0`)"
    )
    kind: str = Field(description="what sort of secret (`github-token`, `private-key`, …)")
    line: Annotated[int, Field(ge=1)]
    end_line: Annotated[int, Field(ge=1)]


REDACTED = (
    "Secrets other than the policy's own credential found in the result, each replaced by "
    "[REDACTED:<kind>] where named (kind, field and lines only; the value never leaves the "
    "gateway)."
)


class SshExecResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    exit_status: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    output_replaced: bool = False
    duration_ms: int
    redacted: int = Field(default=0, ge=0, description="How many secrets were withheld.")
    redactions: list[ResultRedaction] = Field(default_factory=list, description=REDACTED)


class HttpResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: int
    fields: dict[str, Any]
    redacted: int = Field(default=0, ge=0, description="How many secrets were withheld.")
    redactions: list[ResultRedaction] = Field(default_factory=list, description=REDACTED)


class SqlResult(BaseModel):
    """A read-only query's answer: the declared columns of the rows fetched, within the caps."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[list[Any]]
    row_count: int = Field(ge=0, description="Rows returned (the first ones, when cut).")
    truncated: bool = Field(description="More rows were there; the caps stopped the fetch.")
    duration_ms: int
    redacted: int = Field(default=0, ge=0, description="How many secrets were withheld.")
    redactions: list[ResultRedaction] = Field(default_factory=list, description=REDACTED)


class Welcome(BaseModel):
    """The gateway's first message on agent.sock, sent once the peer is identified; a client
    sends nothing before it (bytes already queued then are refused)."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    id: None = None
    type: Literal["welcome"] = "welcome"


class PendingBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    card: Annotated[str, Field(max_length=64)]
    expires_in_s: Annotated[int, Field(ge=0)]
    approve_with: Annotated[str, Field(max_length=128)]


class PendingNotice(BaseModel):
    """Pushed on agent.sock while a proposal waits for a human: which card, how long, and how
    the human answers it (so an MCP client can show progress instead of timing out)."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    id: str
    pending: PendingBody
