"""The MCP endpoint: each request's token chooses what it may see, and every request learns
whether the token's client is still approved (the gateway's answer, reused only while the
gateway's revocation notice says nothing changed: see ``standing``).

A token's ``sp_roots`` select a server of their own: a workspace holding only those roots (the
others are not hidden by a check, they are absent), with its own index, served by the SDK's
Streamable HTTP session manager in stateless mode (each request stands alone, as the 2026-07-28
protocol has it, and no session outlives a revoked token). Servers are made on first use and
kept; the gateway only issues tokens for roots the human approved, so there are few.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from safeport.context_server.gateway_link import GatewayRefusal, GatewayUnavailable
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.http.guard import MAX_BODY_BYTES, plain
from safeport.context_server.http.mcp_body import checked_body
from safeport.context_server.http.standing import StandingChecks
from safeport.context_server.http.tokens import claims_of
from safeport.context_server.operations.reads_journal import REMOTE_CLIENT, RemoteClient
from safeport.shared.schemas.oauth_wire import Profile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TenantServer:
    """The low-level MCP server for one (roots, profile), and the tasks that run beside it
    (the agent profile's watch on the gateway's catalog)."""

    server: Server[Any]
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()


# Builds the server for a set of root names and a profile (called on a worker thread).
ServerFactory = Callable[[frozenset[str], Profile], TenantServer]
MAX_TENANTS = 32


class Tenants:
    """One stateless session manager per (roots, profile), started in the app's task group."""

    def __init__(
        self, make: ServerFactory, served: Collection[str], profiles: Collection[Profile]
    ) -> None:
        self._make = make
        self._served = frozenset(served)
        self._profiles = frozenset(profiles)
        self._managers: dict[tuple[frozenset[str], Profile], StreamableHTTPSessionManager] = {}
        self._lock = anyio.Lock()
        self._tasks: TaskGroup | None = None

    def attach(self, tasks: TaskGroup) -> None:
        self._tasks = tasks

    async def manager(
        self, roots: Collection[str], profile: Profile
    ) -> StreamableHTTPSessionManager | None:
        """The manager for what a token names, or None if it names nothing this server
        serves (or a profile it does not offer)."""
        visible = frozenset(roots) & self._served
        if not visible or profile not in self._profiles:
            return None
        key = (visible, profile)
        found = self._managers.get(key)
        if found is not None:
            return found
        async with self._lock:
            if key not in self._managers:
                if len(self._managers) >= MAX_TENANTS or self._tasks is None:
                    return None
                made = await anyio.to_thread.run_sync(self._make, visible, profile)
                manager = StreamableHTTPSessionManager(
                    app=made.server, stateless=True, max_request_body_size=MAX_BODY_BYTES
                )
                await self._tasks.start(_run_manager, manager)
                for task in made.background:
                    self._tasks.start_soon(task)
                self._managers[key] = manager
            return self._managers[key]


async def _run_manager(
    manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]
) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


class McpEndpoint:
    """The ``/mcp`` ASGI app behind the SDK's ``RequireAuthMiddleware`` (the token's
    signature, issuer, audience and lifetime already held)."""

    def __init__(self, tenants: Tenants, gateway: OAuthGateway, resource_metadata: str) -> None:
        self.tenants = tenants
        self.standing = StandingChecks(
            gateway.check,
            gateway.revocation_notice,
            gateway.gateway_uid,
            connection=gateway.connection,
        )
        self.resource_metadata = resource_metadata

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):  # the SDK's middleware let nothing else in
            await self._unauthorized(send, "authentication required")
            return
        if scope.get("method") == "POST":
            replayed = await checked_body(receive, send)
            if replayed is None:
                return
            receive = replayed
        claims = claims_of(user.access_token)
        try:
            check = await self.standing.check(claims)
        except (GatewayUnavailable, GatewayRefusal) as exc:
            # Fail closed: without the gateway's word, no token is good.
            log.warning("oauth_check failed (%s): request refused", type(exc).__name__)
            await plain(
                send, 503, "the authorization server cannot be reached", [(b"retry-after", b"5")]
            )
            return
        if not check.active:
            await self._unauthorized(send, "the token's client is no longer approved")
            return
        manager = await self.tenants.manager(claims.sp_roots, claims.sp_profile)
        if manager is None:
            await plain(send, 403, "the token grants nothing this server serves")
            return
        token = REMOTE_CLIENT.set(
            RemoteClient(claims.sub, claims.sp_client, user.access_token.token)
        )
        try:
            await manager.handle_request(scope, receive, send)
        finally:
            REMOTE_CLIENT.reset(token)

    async def _unauthorized(self, send: Send, description: str) -> None:
        challenge = (
            f'Bearer error="invalid_token", error_description="{description}", '
            f'resource_metadata="{self.resource_metadata}"'
        )
        await plain(send, 401, description, [(b"www-authenticate", challenge.encode())])
