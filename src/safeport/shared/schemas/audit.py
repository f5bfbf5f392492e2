"""The audit record as a model, for tools that read journals (the verifier never uses it)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class SealedBody(BaseModel):
    """A body encrypted to the vault's audit public key."""

    model_config = ConfigDict(extra="forbid")

    alg: str
    key: str
    ct: str


class AuditRecord(BaseModel):
    """One journal line: either ``body`` or ``sealed``, never both."""

    model_config = ConfigDict(extra="forbid")

    hash: Hex64
    seq: Annotated[int, Field(ge=1)]
    prev: Hex64
    ts: str
    kind: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.-]{0,63}$")]
    body: dict[str, Any] | None = None
    sealed: SealedBody | None = None
    # Cleartext counters beside a sealed body (an intent's sequence, a vault generation), so a
    # scan reads them while the vault is locked; never a secret or an argument's value.
    ref: dict[str, Annotated[int, Field(ge=0)]] | None = None
