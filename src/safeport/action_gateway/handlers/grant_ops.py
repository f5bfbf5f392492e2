"""control.sock's OAuth connect operations: ``oauth.begin``, ``oauth.finish``,
``oauth.device_wait`` (`sp oauth connect`; the work is the core's ``grant_desk.py``).

Beginning proves the vault passphrase like `sp vault add`: a connect writes a credential. The
flow it starts is named by a random id given only to that `sp`, bound to its user, and refused
to a process in an agent's tree like every passphrase-carrying request; `sp` relays the
browser's callback query and never receives a token.
"""

from __future__ import annotations

import base64
import binascii

from pydantic import SecretStr

from safeport.action_gateway.handlers.control_context import ControlContext
from safeport.action_gateway.sockets.connection import Connection
from safeport.errors import Error
from safeport.shared.schemas.control import (
    OAuthBeginRequest,
    OAuthDeviceWaitRequest,
    OAuthFinishRequest,
)
from safeport.shared.schemas.grant_wire import (
    OAuthBegunResult,
    OAuthConnectedResult,
    OAuthDeviceStateResult,
)
from safeport.vault.secrets import SecretBytes


async def oauth_begin(
    ctx: ControlContext, conn: Connection, request: OAuthBeginRequest
) -> OAuthBegunResult:
    params = request.params
    if params.device == (params.redirect_uri is not None):
        raise Error("oauth.begin takes either a redirect_uri (code flow) or device (device flow)")
    secret = _client_secret(params.client_secret_b64)
    try:
        await ctx.prove(conn, request.op, params.passphrase)
    except BaseException:
        if secret is not None:
            secret.wipe()
        raise
    uid = conn.peer.uid
    return await ctx.in_thread(
        lambda: ctx.core.grants.begin(
            params.name,
            uid,
            redirect_uri=params.redirect_uri,
            device=params.device,
            client_secret=secret,
        )
    )


async def oauth_finish(
    ctx: ControlContext, conn: Connection, request: OAuthFinishRequest
) -> OAuthConnectedResult:
    ctx.core.approvals.check_approver(conn.peer)
    params, uid = request.params, conn.peer.uid
    return await ctx.in_thread(
        lambda: ctx.core.grants.finish(params.flow_id, uid, dict(params.query))
    )


async def oauth_device_wait(
    ctx: ControlContext, conn: Connection, request: OAuthDeviceWaitRequest
) -> OAuthDeviceStateResult:
    ctx.core.approvals.check_approver(conn.peer)
    params, uid = request.params, conn.peer.uid
    return await ctx.in_thread(
        lambda: ctx.core.grants.device_wait(params.flow_id, uid, params.wait_s)
    )


def _client_secret(raw: SecretStr | None) -> SecretBytes | None:
    if raw is None:
        return None
    try:
        return SecretBytes(base64.b64decode(raw.get_secret_value(), validate=True))
    except (ValueError, binascii.Error):
        raise Error("the client secret is malformed") from None
