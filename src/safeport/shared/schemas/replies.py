"""Replies on agent.sock and control.sock: built and parsed with one model.

The gateway builds every reply with :func:`ok_reply` / :func:`error_reply` from the result model
of the operation (:mod:`.operations`); the context server and `sp` read the envelope with
:func:`parse_reply` and its result with :func:`parse_result`. The exported ``reply.json`` and
``control_reply.json`` are generated from these models, so the three cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from safeport.errors import ErrorCode, WireError
from safeport.shared.known_secrets import shorten

# What may be echoed back as a request id: printable ASCII, bounded; anything else is null.
_ID_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
MAX_REASON_CHARS = 1024


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ErrorCode
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)]


ResultT = TypeVar("ResultT")
Parsed = TypeVar("Parsed", bound=BaseModel)


class ReplyOk(BaseModel, Generic[ResultT]):
    """An answer; ``result`` is the operation's result model (``ReplyOk[StatusResult]``), or
    the still unread object while only the envelope has been parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    id: str | None
    ok: Literal[True] = True
    result: ResultT


class ReplyError(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    id: str | None
    ok: Literal[False] = False
    error: ErrorBody


Reply = Annotated[ReplyOk[dict[str, Any]] | ReplyError, Field(discriminator="ok")]
REPLY: TypeAdapter[ReplyOk[dict[str, Any]] | ReplyError] = TypeAdapter(Reply)


def ok_reply(request_id: str, result: Parsed) -> ReplyOk[Parsed]:
    return ReplyOk(id=request_id, result=result)


def error_reply(request_id: object, code: ErrorCode, reason: str) -> ReplyError:
    """An error reply; an id that is not a well-formed one is answered as null (junk is never
    echoed), and the reason is redacted, then cut to the schema's bound (:func:`shorten`)."""
    return ReplyError(
        id=echoable_id(request_id),
        error=ErrorBody(code=code, reason=shorten(reason, MAX_REASON_CHARS)),
    )


def echoable_id(value: object) -> str | None:
    return value if isinstance(value, str) and _ID_RE.match(value) else None


def readable_id(data: Mapping[str, Any]) -> str | None:
    """The request's id when it is a well-formed one, else None."""
    return echoable_id(data.get("id"))


def parse_reply(data: Mapping[str, Any]) -> ReplyOk[dict[str, Any]] | ReplyError:
    """A decoded frame as a reply, or :class:`WireError` when it is not one (extra keys, a
    missing result, an unknown error code). The input never reaches the message."""
    try:
        return REPLY.validate_python(data)
    except ValidationError:
        raise WireError("the gateway sent a reply outside the protocol") from None


def parse_result(op: str, model: type[Parsed], result: Mapping[str, Any]) -> Parsed:
    """An ``ok`` reply's result as the model of the operation asked for, whole or not at all:
    a missing, extra or mistyped key is a :class:`WireError` naming where (never the value,
    which may be anything an impostor chose)."""
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        where = sorted({".".join(str(part) for part in error["loc"]) or "the result"
                        for error in exc.errors()})  # fmt: skip
        raise WireError(
            f"the gateway's reply to {op} does not match its contract "
            f"(at {', '.join(where[:3])}{' …' if len(where) > 3 else ''})"
        ) from None


def wire_form(message: BaseModel) -> dict[str, Any]:
    """What goes into a frame: the model's fields in their declared order, a result's with its
    own serializer (the framing encodes them as JSON, refusing what JSON cannot carry)."""
    return message.model_dump()
