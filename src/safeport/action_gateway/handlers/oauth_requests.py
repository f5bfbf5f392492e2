"""agent.sock's ``oauth_*`` requests: the context server relays a remote client's OAuth traffic
and the gateway, as the authorization server, answers it.

They arrive on the same connection as proposals, from a peer identified the same way, parsed
with the agent's union (:mod:`safeport.shared.schemas.oauth_wire` holds their models); each is
answered in a worker thread (a metadata document is fetched, an authorization waits for the
human's answer) while the connection keeps reading.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor

from pydantic import BaseModel

from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.remote_clients.authorization_server import AuthorizationServer
from safeport.action_gateway.sockets.connection import Connection
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
from safeport.shared.schemas.replies import ok_reply

log = logging.getLogger("safeport.gateway")
# Per connection, the requests that may wait (for a human, or a metadata document): each holds a
# worker, and the workers are the proposals' too. The quick ones a relay sends for every remote
# request (check, keys) are never refused for them.
MAX_INFLIGHT = 16
SLOW = (OAuthRegister, OAuthAuthorize, OAuthAuthorizeWait)

OAuthRequest = (
    OAuthKeys
    | OAuthMetadata
    | OAuthRegister
    | OAuthAuthorize
    | OAuthAuthorizeWait
    | OAuthToken
    | OAuthRevoke
    | OAuthCheck
)


async def answer_oauth(
    server: AuthorizationServer, pool: Executor, conn: Connection, request: OAuthRequest
) -> None:
    """Answer in a worker thread without holding up the connection's reading."""
    slow = isinstance(request, SLOW)
    if slow and sum(task.get_name() == "oauth" for task in conn.tasks) >= MAX_INFLIGHT:
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

    task = asyncio.create_task(run(), name="oauth" if slow else "oauth-quick")
    conn.tasks.add(task)
    task.add_done_callback(conn.tasks.discard)


def _dispatch(server: AuthorizationServer, peer: PeerIdentity, request: OAuthRequest) -> BaseModel:
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
    return server.check(request)
