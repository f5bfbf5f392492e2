"""The OAuth requests the HTTP server makes to the gateway on agent.sock, typed both ways.

Each request is built from the wire models of ``oauth_wire`` (so a relayed value the contract
refuses -- too many fields, a value too long -- never leaves this process) and each answer is
validated against its result model. The connection to the gateway is vetted as the agent
profile's is (the socket folder and the listener's uid).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from safeport.context_server.gateway_link import GatewayLink, GatewayUnavailable, HeldLink
from safeport.shared.gateway_socket import check_listener as check_listener_uid
from safeport.shared.gateway_socket import check_socket_folder
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.oauth_wire import (
    OAuthAuthorize,
    OAuthAuthorizeResult,
    OAuthAuthorizeWait,
    OAuthAuthorizeWaitResult,
    OAuthCheck,
    OAuthCheckResult,
    OAuthHttpAnswer,
    OAuthKeys,
    OAuthKeysResult,
    OAuthMetadata,
    OAuthMetadataResult,
    OAuthRegister,
    OAuthRevoke,
    OAuthToken,
    Profile,
)
from safeport.shared.schemas.wire import Envelope

ResultT = TypeVar("ResultT", bound=BaseModel)
MessageT = TypeVar("MessageT", bound=Envelope)

# oauth_check runs on every request: a gateway that does not answer soon fails the request.
CHECK_TIMEOUT_S = 5.0
# The authorization page's long poll waits up to 30 s at the gateway.
WAIT_TIMEOUT_S = 40.0


class OAuthGateway:
    """The gateway as the authorization server, reached over agent.sock."""

    def __init__(self, paths: SafeportPaths, public_url: str) -> None:
        def check_listener(sock: socket.socket) -> None:
            check_socket_folder(paths)
            check_listener_uid(sock, paths)

        self.public_url = public_url
        # Where the gateway says that a standing answer may no longer stand (``standing``).
        self.revocation_notice = paths.revocation_notice
        self.gateway_uid = paths.gateway_uid
        # Keys and checks (every request) share one held connection; the rest, rare and
        # sometimes long (the authorization page's wait), get a connection each.
        self._quick = HeldLink(
            GatewayLink(
                paths.agent_socket, reply_timeout_s=CHECK_TIMEOUT_S, check_listener=check_listener
            )
        )
        self._slow = GatewayLink(
            paths.agent_socket, reply_timeout_s=WAIT_TIMEOUT_S, check_listener=check_listener
        )

    async def keys(self) -> OAuthKeysResult:
        return await self._ask(self._quick, _message(OAuthKeys), OAuthKeysResult)

    def connection(self) -> int | None:
        """The held connection checks are asked on, while it is open (``HeldLink``)."""
        return self._quick.connection()

    async def check(self, client_id: str, token_id: str) -> OAuthCheckResult:
        message = _message(OAuthCheck, client_id=client_id, token_id=token_id)
        return await self._ask(self._quick, message, OAuthCheckResult)

    async def metadata(self) -> OAuthMetadataResult:
        message = _message(OAuthMetadata, public_url=self.public_url)
        return await self._ask(self._quick, message, OAuthMetadataResult)

    async def register(self, client_metadata: dict[str, Any]) -> OAuthHttpAnswer:
        message = _message(
            OAuthRegister, public_url=self.public_url, client_metadata=client_metadata
        )
        return await self._ask(self._slow, message, OAuthHttpAnswer)

    async def authorize(
        self, params: Mapping[str, str], roots: list[str], directories: list[str], profile: Profile
    ) -> OAuthAuthorizeResult:
        message = _message(
            OAuthAuthorize,
            public_url=self.public_url,
            params=dict(params),
            roots=roots,
            root_dirs=directories,
            profile=profile,
        )
        return await self._ask(self._slow, message, OAuthAuthorizeResult)

    async def authorize_wait(self, request_id: str, wait_s: float) -> OAuthAuthorizeWaitResult:
        message = _message(OAuthAuthorizeWait, request_id=request_id, wait_s=wait_s)
        return await self._ask(self._slow, message, OAuthAuthorizeWaitResult)

    async def token(self, form: Mapping[str, str], authorization: str | None) -> OAuthHttpAnswer:
        message = _message(
            OAuthToken,
            public_url=self.public_url,
            form=dict(form),
            authorization=authorization,
        )
        return await self._ask(self._slow, message, OAuthHttpAnswer)

    async def revoke(self, form: Mapping[str, str], authorization: str | None) -> OAuthHttpAnswer:
        message = _message(
            OAuthRevoke,
            public_url=self.public_url,
            form=dict(form),
            authorization=authorization,
        )
        return await self._ask(self._slow, message, OAuthHttpAnswer)

    async def _ask(
        self, link: GatewayLink | HeldLink, message: BaseModel, result: type[ResultT]
    ) -> ResultT:
        body = message.model_dump(mode="json", exclude={"v", "id"}, exclude_none=True)
        answer = await link.ask(body)
        try:
            return result.model_validate(answer)
        except ValidationError:
            raise GatewayUnavailable("the gateway's OAuth answer was malformed") from None


def _message(kind: type[MessageT], **fields: Any) -> MessageT:
    """A request validated by its wire model (``v`` and ``id`` are the link's to set)."""
    return kind.model_validate({"v": 1, "id": "oauth", "type": _TYPES[kind], **fields})


_TYPES: dict[type[Envelope], str] = {
    OAuthKeys: "oauth_keys",
    OAuthMetadata: "oauth_metadata",
    OAuthRegister: "oauth_register",
    OAuthAuthorize: "oauth_authorize",
    OAuthAuthorizeWait: "oauth_authorize_wait",
    OAuthToken: "oauth_token",
    OAuthRevoke: "oauth_revoke",
    OAuthCheck: "oauth_check",
}
