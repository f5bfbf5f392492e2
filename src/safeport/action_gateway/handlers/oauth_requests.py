"""agent.sock's ``oauth_*`` requests: the context server relays a remote client's OAuth traffic
and the gateway, as the authorization server, answers it.

They arrive on the same connection as proposals, from a peer identified the same way; each is
answered in a worker thread (a metadata document is fetched, an authorization waits for the
human's answer) while the connection keeps reading. The requests are the contract's
(:mod:`safeport.shared.schemas.oauth_wire`); they are parsed with their own adapter because the
contract's models build on the agent envelope (one union would import in a circle).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter

from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.remote_clients.authorization_server import AuthorizationServer
from safeport.action_gateway.sockets.connection import Connection, parse_request
from safeport.errors import Error
from safeport.shared.exception_summary import summarize
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
from safeport.shared.schemas.replies import ok_reply, readable_id

log = logging.getLogger("safeport.gateway")
# Per connection: waits for a human hold a worker each, and the workers are the proposals' too.
MAX_INFLIGHT = 16

OAuthRequest = Annotated[
    OAuthKeys
    | OAuthMetadata
    | OAuthRegister
    | OAuthAuthorize
    | OAuthAuthorizeWait
    | OAuthToken
    | OAuthRevoke
    | OAuthCheck,
    Field(discriminator="type"),
]
OAUTH_REQUEST: TypeAdapter[OAuthRequest] = TypeAdapter(OAuthRequest)
OAUTH_TYPES = frozenset(
    {
        "oauth_keys",
        "oauth_metadata",
        "oauth_register",
        "oauth_authorize",
        "oauth_authorize_wait",
        "oauth_token",
        "oauth_revoke",
        "oauth_check",
    }
)


def is_oauth(data: dict[str, Any]) -> bool:
    return data.get("type") in OAUTH_TYPES


async def answer_oauth(
    server: AuthorizationServer, pool: Executor, conn: Connection, data: dict[str, Any]
) -> None:
    """Parse, then answer in a worker thread without holding up the connection's reading."""
    request, problem = parse_request(OAUTH_REQUEST, data)
    if request is None:
        conn.junk["schema"] += 1
        await conn.send_error(readable_id(data), "invalid", str(problem))
        return

    if sum(task.get_name() == "oauth" for task in conn.tasks) >= MAX_INFLIGHT:
        await conn.send_error(request.id, "denied", "too many OAuth requests in progress")
        return

    async def run() -> None:
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(pool, _dispatch, server, conn.peer, request)
        except Error as exc:
            await conn.send_error(request.id, exc.wire_code, exc.message)
        except Exception as exc:  # never kill the connection; the reason stays in the log
            log.error("pid %d %s: internal error %s", conn.peer.pid, request.type, summarize(exc))
            await conn.send_error(request.id, "internal", "the gateway failed on this request")
        else:
            await conn.send(ok_reply(request.id, result))

    task = asyncio.create_task(run(), name="oauth")
    conn.tasks.add(task)
    task.add_done_callback(conn.tasks.discard)


def _dispatch(server: AuthorizationServer, peer: PeerIdentity, request: Any) -> BaseModel:
    if isinstance(request, OAuthKeys):
        return server.keys()
    if isinstance(request, OAuthMetadata):
        return server.metadata(request)
    if isinstance(request, OAuthRegister):
        return server.register(request)
    if isinstance(request, OAuthAuthorize):
        return server.authorization.authorize(peer, request)
    if isinstance(request, OAuthAuthorizeWait):
        return server.authorization.wait(request)
    if isinstance(request, OAuthToken):
        return server.tokens.token(request)
    if isinstance(request, OAuthRevoke):
        return server.tokens.revoke(request)
    assert isinstance(request, OAuthCheck)
    return server.check(request)
