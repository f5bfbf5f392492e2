"""Replies on agent.sock and control.sock: built and parsed with one model.

The gateway builds every reply with :func:`ok_reply` / :func:`error_reply`; the context server
and `sp` read them with :func:`parse_reply`. The exported ``reply.json`` is generated from these
models, so the three cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from safeport.errors import WireError
from safeport.shared.schemas.wire import ErrorCode

# What may be echoed back as a request id: printable ASCII, bounded; anything else is null.
_ID_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
MAX_REASON_CHARS = 1024


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ErrorCode
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)]


class ReplyOk(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    id: str | None
    ok: Literal[True] = True
    result: dict[str, Any]


class ReplyError(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    id: str | None
    ok: Literal[False] = False
    error: ErrorBody


Reply = Annotated[ReplyOk | ReplyError, Field(discriminator="ok")]
REPLY: TypeAdapter[ReplyOk | ReplyError] = TypeAdapter(Reply)


def ok_reply(request_id: str, result: Mapping[str, Any]) -> ReplyOk:
    return ReplyOk(id=request_id, result=dict(result))


def error_reply(request_id: object, code: ErrorCode, reason: str) -> ReplyError:
    """An error reply; an id that is not a well-formed one is answered as null (junk is never
    echoed), and the reason is cut to the schema's bound."""
    return ReplyError(
        id=echoable_id(request_id), error=ErrorBody(code=code, reason=reason[:MAX_REASON_CHARS])
    )


def echoable_id(value: object) -> str | None:
    return value if isinstance(value, str) and _ID_RE.match(value) else None


def readable_id(data: Mapping[str, Any]) -> str | None:
    """The request's id when it is a well-formed one, else None."""
    return echoable_id(data.get("id"))


def parse_reply(data: Mapping[str, Any]) -> ReplyOk | ReplyError:
    """A decoded frame as a reply, or :class:`WireError` when it is not one (extra keys, a
    missing result, an unknown error code). The input never reaches the message."""
    try:
        return REPLY.validate_python(data)
    except ValidationError:
        raise WireError("the gateway sent a reply outside the protocol") from None


def wire_form(message: BaseModel) -> dict[str, Any]:
    """What goes into a frame: the model's fields in their declared order (the framing encodes
    them as JSON, refusing what JSON cannot carry)."""
    return message.model_dump()
