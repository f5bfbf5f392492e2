"""control.sock's messages for connecting an OAuth grant (`sp oauth connect`).

The human's `sp` starts a flow (``oauth.begin``, with the passphrase proof `sp vault add`
gives), opens or prints what the provider's page needs, and relays the one thing the browser
brings back -- the loopback callback's query -- with ``oauth.finish``; or, for the device
flow, waits with ``oauth.device_wait``. Every token stays in the gateway: `sp` never sees a
refresh or access token, only the scopes granted.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StrictBool, StrictInt, StrictStr

from safeport.shared.schemas.oauth_wire import FormFields
from safeport.shared.schemas.results import Result

# A flow is named by a random id only the `sp` that began it was given.
FlowId = Annotated[StrictStr, Field(min_length=16, max_length=64)]
MAX_DEVICE_WAIT_S = 30


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class OAuthBeginParams(_Params):
    """A code flow (``redirect_uri``: `sp`'s loopback listener) or a device flow."""

    passphrase: Annotated[SecretStr, Field(min_length=1, max_length=4096)]
    name: Annotated[StrictStr, Field(min_length=1, max_length=64)]
    redirect_uri: Annotated[StrictStr, Field(max_length=256)] | None = None
    device: StrictBool = False
    # A confidential client's secret, base64 (given at connect through the hidden prompt).
    client_secret_b64: Annotated[SecretStr, Field(min_length=1, max_length=8192)] | None = None


class OAuthFinishParams(_Params):
    flow_id: FlowId
    query: FormFields


class OAuthDeviceWaitParams(_Params):
    flow_id: FlowId
    wait_s: Annotated[StrictInt, Field(ge=1, le=MAX_DEVICE_WAIT_S)] = MAX_DEVICE_WAIT_S


class OAuthBegunResult(Result):
    """A started flow: the page to open (code flow), or the code to enter (device flow)."""

    _ABSENT_WHEN_NONE = frozenset(
        {
            "authorization_url",
            "user_code",
            "verification_uri",
            "verification_uri_complete",
            "interval",
            "expires_in",
        }
    )

    flow_id: str
    scopes: list[str]
    authorization_url: str | None = None
    user_code: str | None = None
    verification_uri: str | None = None
    verification_uri_complete: str | None = None
    interval: int | None = None
    expires_in: int | None = None


class OAuthConnectedResult(Result):
    name: str
    scopes: list[str]


class OAuthDeviceStateResult(Result):
    _ABSENT_WHEN_NONE = frozenset({"scopes"})

    state: Literal["pending", "connected"]
    name: str
    scopes: list[str] | None = None
