"""The `[credentials.NAME]` tables of gateway.toml: what the vault holds, how calls are approved.

The secret itself is never here; a credential names its kind, where its value lives (the local
vault by default, or an OpenBao server) and, for an OAuth grant, the authorization server the
gateway connects to and refreshes from.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from safeport.shared.schemas.config_gateway import ApprovalFactor
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.shared.schemas.config_sources import LOCAL_SOURCE, CredentialOrigin

Approval = Literal["session", "per-call"]


class Credential(CredentialOrigin):
    kind: Literal["token", "basic", "ssh-key", "oauth"]
    """What the vault holds: a bearer "token", a "basic" pair, an "ssh-key" or an "oauth" grant."""
    approval: Approval = "per-call"
    """The default approval of calls using it: one card per "session" or per call."""
    rate_per_minute: Annotated[int, Field(ge=1, le=100000)] | None = None
    """The most calls per minute with this credential, over every host and service using it."""
    approval_factor: ApprovalFactor = "passphrase"
    """"key": a yes for its calls needs a touch of an enrolled security key, not the passphrase."""
    oauth: OAuthGrantSpec | None = None
    """For `kind = "oauth"`: the authorization server and the scopes of the grant."""

    @model_validator(mode="after")
    def _oauth_table_with_oauth_kind(self) -> Credential:
        if (self.kind == "oauth") != (self.oauth is not None):
            raise ValueError('an [oauth] table goes with `kind = "oauth"`, and only with it')
        # The refresh token is minted into the local vault at connect and rotated there; a
        # server-held copy would be spent by whoever else reads it.
        if self.kind == "oauth" and self.source != LOCAL_SOURCE:
            raise ValueError("an oauth credential lives in the local vault (no `source`)")
        return self
