"""The authorization endpoints, relayed to the gateway (the authorization server).

Nothing is decided here: query strings and form bodies go to the gateway as string maps, JSON
bodies as they parsed, and its answers are rendered -- JSON with the gateway's status, or for
``/authorize`` the waiting page, a redirect to the location the gateway chose, or an error page
that redirects nowhere. A parameter given twice is refused (RFC 6749 §3.1): a map could carry
only one of the two, and which one the client meant is not ours to guess.

The one thing decided here is a token request's rate bucket (``grant_charge``): its client's,
if its grant is signed for that client, or the anonymous one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import quote

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from pydantic import ValidationError
from starlette.datastructures import ImmutableMultiDict
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from safeport.context_server.gateway_link import GatewayRefusal, GatewayUnavailable
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.http.grant_charge import MAX_FORM_BYTES, TokenRequestGate
from safeport.context_server.http.guard import MAX_BODY_BYTES, TOO_MANY, retry_after
from safeport.context_server.http.pages import (
    SECURITY_HEADERS,
    WAIT_PATH,
    ended_page,
    error_page,
    waiting_page,
)
from safeport.shared.outside_json import JsonRefused, loads_object
from safeport.shared.schemas.oauth_wire import OAuthHttpAnswer, Profile

log = logging.getLogger(__name__)

# What the relay passes on from the gateway's headers (anything else is ours to set).
PASSED_HEADERS = frozenset({"cache-control", "pragma", "www-authenticate", "retry-after"})
WAIT_S = 25.0


class BadRequest(Exception):
    """The request cannot be relayed as it is (duplicate or oversized parameters, bad JSON)."""


def relay_routes(
    gateway: OAuthGateway,
    roots: Sequence[str],
    directories: Sequence[str],
    profile: Profile,
    token_gate: TokenRequestGate,
) -> list[Route]:
    """The authorization server's endpoints at the public URL, relayed to ``gateway``:
    ``roots`` are the served roots' identities, ``directories`` theirs (for the card);
    ``token_gate`` charges token requests to their rate buckets."""
    relay = _Relay(gateway, list(roots), list(directories), profile, token_gate)
    return [
        Route("/.well-known/oauth-authorization-server", _relayed(relay.metadata), methods=["GET"]),
        Route("/register", _relayed(relay.register), methods=["POST"]),
        Route("/authorize", _relayed(relay.authorize), methods=["GET"]),
        Route(WAIT_PATH, _relayed(relay.authorize_wait), methods=["GET"]),
        Route("/token", _relayed(relay.token), methods=["POST"]),
        Route("/revoke", _relayed(relay.revoke), methods=["POST"]),
    ]


class _Relay:
    """One handler per endpoint, each passing the request to the gateway and rendering its
    answer; the served roots and the profile go with every authorization request."""

    def __init__(
        self,
        gateway: OAuthGateway,
        served: list[str],
        shown: list[str],
        profile: Profile,
        token_gate: TokenRequestGate,
    ) -> None:
        self.gateway = gateway
        self.served = served
        self.shown = shown
        self.profile = profile
        self.token_gate = token_gate

    async def metadata(self, _: Request) -> Response:
        answer = await self.gateway.metadata()
        return JSONResponse(answer.metadata, headers={"cache-control": "max-age=60"})

    async def register(self, request: Request) -> Response:
        body = await _json_object(request)
        return _render(await self.gateway.register(body))

    async def authorize(self, request: Request) -> Response:
        params = _single_values(request.query_params)
        result = await self.gateway.authorize(params, self.served, self.shown, self.profile)
        if result.kind == "wait" and result.request_id and result.user_code:
            return waiting_page(
                result.request_id, result.user_code, result.client_name, result.redirect_host
            )
        if result.kind == "redirect" and result.location:
            return _redirect(result.location)
        return error_page(
            result.status if 400 <= result.status < 600 else 400,
            result.error or "invalid_request",
            result.error_description,
        )

    async def authorize_wait(self, request: Request) -> Response:
        params = _single_values(request.query_params)
        request_id = params.get("request_id", "")
        if not 16 <= len(request_id) <= 128:
            return error_page(400, "invalid_request", "unknown authorization request")
        answer = await self.gateway.authorize_wait(request_id, WAIT_S)
        if answer.state == "pending":
            # The gateway does not send the code again; the page the browser already shows
            # has it, and a reload of the long poll only needs to come back here.
            return waiting_again(request_id)
        if answer.location:
            if answer.state == "approved":
                await self.token_gate.warm()  # the code exchange that follows is told by its key
            return _redirect(answer.location)
        return ended_page(answer.state)

    async def token(self, request: Request) -> Response:
        if not isinstance(request.scope.get("user"), AuthenticatedUser):  # else charged already
            wait = await self.token_gate.charge(lambda: _small_form(request))
            if wait is not None:
                return _json_error(
                    429, "rate_limited", TOO_MANY, {"retry-after": retry_after(wait)}
                )
        form = await _form(request)
        return _render(await self.gateway.token(form, request.headers.get("authorization")))

    async def revoke(self, request: Request) -> Response:
        form = await _form(request)
        return _render(await self.gateway.revoke(form, request.headers.get("authorization")))


def waiting_again(request_id: str) -> Response:
    """The long poll's 'still pending': the same wait again (a redirect to itself, so the
    browser keeps the page with the code on screen)."""
    return RedirectResponse(
        f"{WAIT_PATH}?request_id={quote(request_id, safe='')}",
        status_code=303,
        headers=SECURITY_HEADERS,
    )


def _relayed(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """The gateway's absence and a malformed request answered the same way everywhere."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except (BadRequest, ValidationError):
            return _json_error(400, "invalid_request", "malformed or oversized request")
        except GatewayRefusal as exc:
            log.warning("the gateway refused a relayed OAuth request: %s", exc.code)
            return _json_error(400, "invalid_request", "refused by the authorization server")
        except GatewayUnavailable:
            return _json_error(503, "temporarily_unavailable", "the authorization server is down")

    return endpoint


def _render(answer: OAuthHttpAnswer) -> Response:
    headers = {k: v for k, v in answer.headers.items() if k.lower() in PASSED_HEADERS}
    headers.setdefault("cache-control", "no-store")
    status = answer.status if 200 <= answer.status < 600 else 500
    return JSONResponse(answer.body, status_code=status, headers=headers)


def _redirect(location: str) -> Response:
    return RedirectResponse(location, status_code=302, headers={"cache-control": "no-store"})


def _json_error(
    status: int, error: str, description: str, headers: dict[str, str] | None = None
) -> Response:
    body = {"error": error, "error_description": description}
    return JSONResponse(
        body, status_code=status, headers={"cache-control": "no-store", **(headers or {})}
    )


def _single_values(values: ImmutableMultiDict[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, value in values.multi_items():
        if key in found:
            raise BadRequest("a parameter is given more than once")
        found[key] = value
    return found


async def _form(request: Request) -> dict[str, str]:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise BadRequest("the body must be application/x-www-form-urlencoded")
    try:
        form = await request.form(max_files=0, max_fields=32)
    except HTTPException:  # too many fields: the form parser's own 400, answered as ours
        raise BadRequest("the form has too many fields") from None
    values: dict[str, str] = {}
    for key, value in form.multi_items():
        if not isinstance(value, str) or key in values:
            raise BadRequest("a field is repeated or not text")
        values[key] = value
    return values


async def _small_form(request: Request) -> dict[str, str] | None:
    """The form if it is small and well formed; None otherwise (charged without a look)."""
    if len(await request.body()) > MAX_FORM_BYTES:
        return None
    try:
        return await _form(request)
    except (BadRequest, HTTPException):
        return None


async def _json_object(request: Request) -> dict[str, object]:
    """The body through the strict outside-input decoder: nesting, numbers, NaN, repeated
    keys and lone surrogates are each a 400, never an exception the server did not expect."""
    try:
        return loads_object(await request.body(), max_bytes=MAX_BODY_BYTES)
    except JsonRefused:
        raise BadRequest("the body is not a JSON object") from None
