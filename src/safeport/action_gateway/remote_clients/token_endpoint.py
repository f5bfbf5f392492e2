"""The token endpoint (code and refresh grants) and revocation (RFC 7009).

Clients are public (PKCE, ``token_endpoint_auth_method`` none): the form names the client and
the code or refresh token proves the grant. Failed requests are counted per client and in all,
and past the limit a failure is answered ``slow_down`` (guessing 256-bit codes or refresh
tokens, stored as digests, is hopeless anyway); a valid grant is always served, since a
stranger can fail in any client's name. A replayed code or a reused refresh token revokes what
it touched.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from safeport.action_gateway.remote_clients import authorization_rules as rules
from safeport.action_gateway.remote_clients.issuer import IssuedTokens, Issuer
from safeport.action_gateway.remote_clients.signing_key import TokenRejected
from safeport.action_gateway.remote_clients.token_ledger import CodeRecord, Family, Redeemed
from safeport.shared.schemas.oauth_wire import OAuthHttpAnswer, OAuthRevoke, OAuthToken

FAILURES_PER_CLIENT = 10
FAILURES_IN_ALL = 60
FAILURE_WINDOW_S = 60.0
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class FailedRequests:
    """Failed token requests per client and in all, over a sliding minute (time from the issuer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}

    def over(self, client_id: str, now: float) -> bool:
        with self._lock:
            mine = self._recent(client_id[:512], now)
            everyone = self._recent("*", now)
            return len(mine) >= FAILURES_PER_CLIENT or len(everyone) >= FAILURES_IN_ALL

    def failed(self, client_id: str, now: float) -> None:
        with self._lock:
            if len(self._seen) > 4096:
                self._seen = {"*": self._seen.get("*", [])}
            for key in (client_id[:512], "*"):
                self._seen.setdefault(key, []).append(now)

    def _recent(self, key: str, now: float) -> list[float]:
        kept = [t for t in self._seen.get(key, []) if now - t < FAILURE_WINDOW_S]
        self._seen[key] = kept
        return kept


class TokenEndpoint:
    def __init__(self, issuer: Issuer) -> None:
        self._issuer = issuer
        self._failures = FailedRequests()

    def token(self, request: OAuthToken) -> OAuthHttpAnswer:
        form = request.form
        self._issuer.key()  # locked: VaultLocked, nothing issued
        client_id = form.get("client_id", "")
        now = self._issuer.clock()
        if request.authorization is not None:
            answer = _error(401, "invalid_client", "clients here are public (PKCE, no secret)")
        elif form.get("grant_type") == "authorization_code":
            answer = self._code_grant(form, request.public_url)
        elif form.get("grant_type") == "refresh_token":
            answer = self._refresh_grant(form, request.public_url)
        else:
            answer = _error(400, "unsupported_grant_type", "code or refresh_token grants only")
        if answer.status == 200:
            # A valid grant is served whatever the counters say: client ids are public, so a
            # stranger could otherwise spend a client's budget (or everyone's) and lock it out.
            # Guessing a 256-bit code or refresh token is hopeless either way.
            return answer
        over = self._failures.over(client_id, now)
        self._failures.failed(client_id, now)
        if over:
            return _error(429, "slow_down", "too many failed token requests; wait a minute")
        return answer

    def revoke(self, request: OAuthRevoke) -> OAuthHttpAnswer:
        """RFC 7009: always 200 for a well-formed request (whether the token was known is not
        told); a refresh token ends its family, an access token the family it came from."""
        token = request.form.get("token", "")
        self._issuer.key()
        family = self._issuer.ledger.revoke_token(token)
        if family is None and token.count(".") == 2:
            family = self._revoke_access(token, request.public_url)
        if family is not None:
            self._issuer.journal(
                "oauth.revoked", {"client": family.binding.client_id, "family": family.id}
            )
        return OAuthHttpAnswer(status=200, body={}, headers=NO_STORE)

    # -- grants -------------------------------------------------------------------------------

    def _code_grant(self, form: Mapping[str, str], public_url: str) -> OAuthHttpAnswer:
        client_id = form.get("client_id", "")
        verifier = form.get("code_verifier", "")
        redirect_uri = form.get("redirect_uri")
        resource = form.get("resource")
        state = self._issuer.book().get(client_id)

        def check(record: CodeRecord) -> str | None:
            binding = record.binding
            if binding.client_id != client_id or state is None or state.revoked_at is not None:
                return "invalid_grant"
            if redirect_uri is None and record.redirect_named:
                return "invalid_grant"
            if redirect_uri is not None and redirect_uri != record.redirect_uri:
                return "invalid_grant"
            if resource is not None and resource != binding.resource:
                return "invalid_target"
            if binding.issuer != rules.issuer_of(public_url):
                return "invalid_grant"
            return None

        def proves(record: CodeRecord) -> bool:
            return rules.pkce_matches(verifier, record.code_challenge)

        redeemed = self._issuer.ledger.redeem_code(form.get("code", ""), check, proves)
        if redeemed.spent:
            self._issuer.journal("oauth.code_spent", {"client": client_id, "why": "pkce"})
        return self._answer(redeemed, "oauth.code_redeemed", "oauth.code_replayed")

    def _refresh_grant(self, form: Mapping[str, str], public_url: str) -> OAuthHttpAnswer:
        client_id = form.get("client_id", "")
        resource = form.get("resource")
        state = self._issuer.book().get(client_id)

        def check(family: Family) -> str | None:
            binding = family.binding
            if binding.client_id != client_id or state is None or state.revoked_at is not None:
                return "invalid_grant"
            if resource is not None and resource != binding.resource:
                return "invalid_target"
            if binding.issuer != rules.issuer_of(public_url):
                return "invalid_grant"
            return None

        redeemed = self._issuer.ledger.rotate(form.get("refresh_token", ""), check)
        return self._answer(redeemed, "oauth.refreshed", "oauth.refresh_reused")

    def _answer(self, redeemed: Redeemed, granted: str, replayed: str) -> OAuthHttpAnswer:
        if redeemed.replayed_family is not None:
            self._issuer.journal(replayed, {"family": redeemed.replayed_family, "revoked": True})
        family = redeemed.family
        if family is None:
            problem = redeemed.problem or "invalid_grant"
            return _error(400, problem, "the grant is not valid for this client")
        tokens = self._issuer.issue(family)
        self._issuer.journal(
            granted,
            {
                "client": family.binding.client_id,
                "family": family.id,
                "roots": list(family.binding.roots),
                "profile": family.binding.profile,
                "refresh_sha256_prefix": rules.token_digest(tokens.refresh_token)[:12],
            },
        )
        return OAuthHttpAnswer(status=200, body=_token_response(tokens), headers=NO_STORE)

    def _revoke_access(self, token: str, public_url: str) -> Family | None:
        issuer = rules.issuer_of(public_url)
        try:
            claims = self._issuer.key().verify(
                token,
                issuer=issuer,
                audience=rules.resource_of(public_url),
                now=self._issuer.clock(),
                expired_ok=True,
            )
        except TokenRejected:
            return None
        return self._issuer.ledger.revoke_access(claims.jti)


def _token_response(tokens: IssuedTokens) -> dict[str, object]:
    """The RFC 6749 token response: the HTTP body the context server relays as it is."""
    return {
        "access_token": tokens.access_token,
        "token_type": "Bearer",
        "expires_in": tokens.expires_in,
        "refresh_token": tokens.refresh_token,
    }


def _error(status: int, error: str, description: str) -> OAuthHttpAnswer:
    return OAuthHttpAnswer(
        status=status, body={"error": error, "error_description": description}, headers=NO_STORE
    )
