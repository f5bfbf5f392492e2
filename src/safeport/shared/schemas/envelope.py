"""What every request on both sockets carries: the protocol version and the id its reply names."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

RequestId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")]


class Envelope(BaseModel):
    """What every request carries: the protocol version and the id its reply names."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    v: Literal[1]
    id: RequestId
