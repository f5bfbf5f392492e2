"""The gateway as the OAuth 2.1 authorization server of remote MCP clients.

One object per gateway, one method per ``oauth_*`` request of agent.sock, plus what `sp context
clients` and remote proposals need. The context server relays; every decision is made here.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from safeport.action_gateway.remote_clients import authorization_rules as rules
from safeport.action_gateway.remote_clients.authorization import Asker, AuthorizationEndpoint
from safeport.action_gateway.remote_clients.client_book import RemoteClient
from safeport.action_gateway.remote_clients.issuer import Issuer
from safeport.action_gateway.remote_clients.metadata_documents import MetadataDocuments
from safeport.action_gateway.remote_clients.revocation_notice import RevocationNotice
from safeport.action_gateway.remote_clients.signing_key import TokenRejected
from safeport.action_gateway.remote_clients.throttle import Throttle
from safeport.action_gateway.remote_clients.token_endpoint import NO_STORE, TokenEndpoint
from safeport.errors import Denied, Error
from safeport.shared.outside_json import JsonRefused, jwt_parts
from safeport.shared.schemas.oauth_wire import (
    AccessClaims,
    OAuthCheck,
    OAuthCheckResult,
    OAuthHttpAnswer,
    OAuthKeysResult,
    OAuthMetadata,
    OAuthMetadataResult,
    OAuthRegister,
)
from safeport.shared.schemas.results import ClientApprovalView, RemoteClientView

REGISTRATIONS_PER_MINUTE = 60


class NoSuchClient(Error):
    exit_code = 1
    wire_code = "denied"


class RemoteActionRefused(Denied):
    """A proposal carrying a remote client's token that may not go on."""


@dataclass(frozen=True)
class RemoteCaller:
    """A remote client proven by its access token, as a proposal's card names it."""

    client_id: str
    client_name: str

    @property
    def label(self) -> str:
        return f"{self.client_name} ({self.client_id})"


class AuthorizationServer:
    def __init__(
        self,
        issuer: Issuer,
        documents: MetadataDocuments,
        asker: Asker,
        notice: RevocationNotice | None = None,
    ) -> None:
        self._issuer = issuer
        self._notice = notice
        self.authorization = AuthorizationEndpoint(issuer, documents, asker)
        self.tokens = TokenEndpoint(issuer)
        self._registrations = Throttle(REGISTRATIONS_PER_MINUTE, 60.0, issuer.clock)

    def keys(self) -> OAuthKeysResult:
        return OAuthKeysResult(keys=[self._issuer.key().public])

    def metadata(self, request: OAuthMetadata) -> OAuthMetadataResult:
        return OAuthMetadataResult(metadata=rules.server_metadata(request.public_url))

    def register(self, request: OAuthRegister) -> OAuthHttpAnswer:
        """RFC 7591 dynamic registration: a public client with checked redirect URIs. It is
        only a record; nothing is issued until the human approves the client's first request."""
        metadata = request.client_metadata
        self._issuer.key()
        problem = rules.registration_problem(metadata)
        body: dict[str, object]
        if problem is not None:
            body = {"error": problem.error, "error_description": problem.description}
            return OAuthHttpAnswer(status=400, body=body, headers=NO_STORE)
        throttled = self._registrations.take()
        if throttled == "refused_first":
            per_minute: dict[str, object] = {"per_minute": REGISTRATIONS_PER_MINUTE}
            self._issuer.journal("oauth.registrations_throttled", per_minute)
        if throttled != "ok":
            body = {"error": "temporarily_unavailable", "error_description": "too many, wait"}
            return OAuthHttpAnswer(status=429, body=body, headers=NO_STORE)
        now = self._issuer.clock()
        client = RemoteClient(
            client_id=f"sp-{secrets.token_urlsafe(16)}",
            name=rules.client_name_of(metadata, "unnamed client"),
            source="registered",
            redirect_uris=tuple(str(uri) for uri in metadata["redirect_uris"]),
            registered_at=now,
        )
        try:
            self._issuer.book().register(client)
        except ValueError:
            body = {"error": "invalid_client_metadata", "error_description": "too many"}
            return OAuthHttpAnswer(status=400, body=body, headers=NO_STORE)
        self._issuer.journal(
            "oauth.client_registered",
            {
                "client": client.client_id,
                "name": client.name,
                "source": client.source,
                "redirect_hosts": sorted({rules.redirect_host(u) for u in client.redirect_uris}),
            },
        )
        body = {
            "client_id": client.client_id,
            "client_id_issued_at": int(now),
            "client_name": client.name,
            "redirect_uris": list(client.redirect_uris),
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        return OAuthHttpAnswer(status=201, body=body, headers=NO_STORE)

    def check(self, request: OAuthCheck) -> OAuthCheckResult:
        """Is an access token (already signature-checked by the context server) still good?"""
        try:
            state = self._issuer.book().get(request.client_id)
        except Error:
            return OAuthCheckResult(active=False, reason="the vault is locked")
        if state is None or state.revoked_at is not None:
            return OAuthCheckResult(active=False, reason="client revoked or unknown")
        why = self._issuer.ledger.access_state(request.client_id, request.token_id)
        if why is not None:
            return OAuthCheckResult(active=False, reason=why)
        self._issuer.book().used(request.client_id, self._issuer.clock())
        return OAuthCheckResult(active=True)

    def remote_caller(self, token: str) -> RemoteCaller:
        """The client a proposal's ``remote_token`` proves, if remote actions are on and the
        token is good for the agent profile; else :class:`RemoteActionRefused`."""
        if not self._issuer.settings().actions:
            raise RemoteActionRefused("actions for remote clients are off ([remote] actions)")
        try:
            claims = _unverified_claims(token)
            claims = self._issuer.key().verify(
                token, issuer=claims.iss, audience=f"{claims.iss}/mcp", now=self._issuer.clock()
            )
        except TokenRejected as exc:
            raise RemoteActionRefused("the remote client's token is not valid") from exc
        active = self.check(
            OAuthCheck(
                v=1, id="remote", type="oauth_check", client_id=claims.sub, token_id=claims.jti
            )
        )
        if not active.active:
            raise RemoteActionRefused("the remote client's token is no longer good")
        if claims.sp_profile != "agent":
            raise RemoteActionRefused("the remote client was approved for reading only")
        return RemoteCaller(claims.sub, claims.sp_client)

    def client_views(self) -> list[RemoteClientView]:
        return [
            RemoteClientView(
                client_id=state.client.client_id,
                name=state.client.name,
                source=state.client.source,
                redirect_hosts=sorted({rules.redirect_host(u) for u in state.client.redirect_uris}),
                approved=[
                    ClientApprovalView(
                        roots=list(a.roots),
                        profile=a.profile,
                        redirect_host=rules.redirect_host(a.redirect_uri),
                    )
                    for a in state.approvals
                ],
                revoked=state.revoked_at is not None,
                last_used=state.last_used,
            )
            for state in self._issuer.book().all()
        ]

    def revoke_client(self, client_id: str, *, by: str) -> str:
        book = self._issuer.book()
        try:
            known = book.revoke(client_id, self._issuer.clock())
        finally:
            # Even if the book could not be written (it is revoked in memory, so the gateway
            # already refuses the client): its families end and the notice is replaced.
            families = self._issuer.ledger.revoke_client(client_id)
        if not known:
            raise NoSuchClient(
                f"no remote client {client_id[:200]}", hint="`sp context clients list` shows them"
            )
        self._issuer.journal(
            "oauth.client_revoked", {"client": client_id, "families": families, "by": by}
        )
        return client_id

    def locked(self) -> None:
        self._issuer.locked()

    def close(self) -> None:
        """The gateway is stopping: its revocation notice goes with it."""
        if self._notice is not None:
            self._notice.withdraw()


def _unverified_claims(token: str) -> AccessClaims:
    """The claims read before the signature check, only to learn which issuer to check for."""
    import jwt
    from pydantic import ValidationError

    try:
        # The strict decoder reads the header and payload before the JWT library does: its
        # own parser would let a deeply nested part escape as a RecursionError.
        jwt_parts(token)
        decoded = jwt.decode(token, options={"verify_signature": False})
        return AccessClaims.model_validate(decoded)
    except (JsonRefused, jwt.PyJWTError, ValidationError) as exc:
        raise TokenRejected() from exc
