"""The HTTP server's ASGI app: guards, the resource server and the relay, assembled.

Outermost first: :class:`TransportGuard` (Host, Origin, body size and time), the SDK's bearer
authentication with :class:`GatewayTokenVerifier` (a token that fails any check is no token),
:class:`RateGate` (per client, or the anonymous bucket; an anonymous token request is charged by
the relay, by its grant's signature), then the routes: the protected-resource metadata (the
SDK's, RFC 9728), the relayed authorization endpoints, and ``/mcp`` behind the SDK's
``RequireAuthMiddleware`` (401 with ``resource_metadata``) and the per-request ``oauth_check``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from safeport.context_server.http.admission import Admission
from safeport.context_server.http.endpoint import (
    MCP_PATH,
    HttpEndpoint,
    host_header_values,
    origin_values,
)
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.http.grant_charge import TokenRequestGate
from safeport.context_server.http.guard import RateGate, TransportGuard
from safeport.context_server.http.pages import APPROVAL_PATH, approval_page
from safeport.context_server.http.relay import relay_routes
from safeport.context_server.http.tenants import McpEndpoint, ServerFactory, Tenants
from safeport.context_server.http.tokens import GatewayTokenVerifier, SigningKeys, TokenChecker
from safeport.context_server.tools.held_proposals import ApprovalView
from safeport.shared.schemas.oauth_wire import Profile


@dataclass(frozen=True)
class RemoteRoot:
    """A served root as remote clients are approved for it: its identity (``root_ids``: the
    name and a digest of the directory) and the directory, which the card shows."""

    id: str
    directory: str


@dataclass(frozen=True)
class RemoteService:
    """What the HTTP server serves: the roots, and the profile remote clients are offered
    (the agent profile only when remote actions are turned on; reader tokens stay readers)."""

    roots: Sequence[RemoteRoot]
    profile: Profile = "reader"
    # A held action's page by its id (``held_proposals``): the agent profile only.
    approvals: Callable[[str], ApprovalView | None] | None = None

    @property
    def profiles(self) -> tuple[Profile, ...]:
        return ("reader", "agent") if self.profile == "agent" else ("reader",)


def build_app(
    endpoint: HttpEndpoint,
    service: RemoteService,
    gateway: OAuthGateway,
    make_server: ServerFactory,
    admission: Admission | None = None,
) -> Starlette:
    resource = AnyHttpUrl(endpoint.resource)
    metadata_url = str(build_resource_metadata_url(resource))
    keys = SigningKeys(gateway.keys)
    checker = TokenChecker(keys, endpoint.public_url, endpoint.resource)
    admission = admission or Admission()
    tenants = Tenants(make_server, [r.id for r in service.roots], service.profiles)
    mcp = McpEndpoint(tenants, gateway, metadata_url)
    routes = [
        Route(urlsplit(metadata_url).path, resource_metadata(endpoint), methods=["GET"]),
        *relay_routes(
            gateway,
            [r.id for r in service.roots],
            [r.directory for r in service.roots],
            service.profile,
            TokenRequestGate(admission, keys),
        ),
        Route(
            MCP_PATH,
            endpoint=RequireAuthMiddleware(mcp, [], AnyHttpUrl(metadata_url)),
            methods=["GET", "POST", "DELETE"],
        ),
    ]
    if service.approvals is not None:
        routes.append(
            Route(APPROVAL_PATH + "{page}", approval_route(service.approvals), methods=["GET"])
        )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tenants.attach(tasks)
            # Token requests are told apart by the keys already held, never fetched for them.
            tasks.start_soon(keys.warm)
            yield
            tasks.cancel_scope.cancel()

    middleware = [
        Middleware(
            TransportGuard, hosts=host_header_values(endpoint), origins=origin_values(endpoint)
        ),
        Middleware(
            AuthenticationMiddleware,
            backend=BearerAuthBackend(GatewayTokenVerifier(checker), resource_server_url=resource),
        ),
        # The SDK reads the request's token from here: it binds a sealed requestState to the
        # client that received it (another client's replay is refused).
        Middleware(AuthContextMiddleware),
        Middleware(RateGate, admission=admission),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def approval_route(
    view: Callable[[str], ApprovalView | None],
) -> Callable[[Request], Awaitable[Response]]:
    """A held action's page. Its id is 192 random bits, apart from the handle the client's
    sealed state names; it shows the card's id and how to answer it, and answers nothing."""

    async def serve(request: Request) -> Response:
        page = str(request.path_params.get("page", ""))
        found = view(page) if 16 <= len(page) <= 64 else None
        if found is None:
            return approval_page(None, None, False)
        return approval_page(found.card, found.approve_with, found.waiting)

    return serve


def resource_metadata(endpoint: HttpEndpoint) -> Callable[[Request], Awaitable[Response]]:
    """RFC 9728 metadata, at the path the SDK's client looks for (``build_resource_metadata_url``).

    Written out rather than through the SDK's route: its URL type renders the issuer with a
    trailing slash (``https://host/``), and the SDK's own client then refuses the gateway's
    metadata, whose issuer (like the tokens' ``iss``) is the public URL exactly."""
    document = {
        "resource": endpoint.resource,
        "authorization_servers": [endpoint.public_url],
        "bearer_methods_supported": ["header"],
        "resource_name": "safeport workspace",
    }

    async def serve(_: Request) -> Response:
        return JSONResponse(document, headers={"cache-control": "max-age=300"})

    return serve
