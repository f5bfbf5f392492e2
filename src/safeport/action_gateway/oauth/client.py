"""One grant's OAuth client: discovery, the code and device flows, refresh and revocation.

The steps of RFC 6749, 7636, 8628, 7009 and 9207 in the order a grant goes through them, each
one request over :class:`OAuthHttp` and one pure decision in :mod:`protocol`. Nothing here keeps
a token: the caller (the gateway's grant broker) decides where each one goes. A refresh refused
with ``invalid_grant`` raises :class:`OAuthGrantDead`, which no retry can cure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from safeport.action_gateway.oauth.endpoints import (
    Endpoints,
    Metadata,
    metadata_urls,
    parse_metadata,
    resolve,
)
from safeport.action_gateway.oauth.errors import (
    OAuthBadResponse,
    OAuthError,
    OAuthGrantDead,
    OAuthRefused,
    withheld_if_quoting,
)
from safeport.action_gateway.oauth.presets import PRESETS
from safeport.action_gateway.oauth.protocol import (
    DeviceAuthorization,
    DevicePending,
    Pkce,
    TokenGrant,
    authorization_url,
    check_callback,
    new_pkce,
    new_state,
    parse_device_poll,
    parse_device_response,
    parse_token_response,
    scope_text,
)
from safeport.action_gateway.oauth.transport import FormValue, OAuthHttp, RawResponse
from safeport.shared.exact_urls import UrlRefused, exact_url
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault.secrets import SecretBytes

_T = TypeVar("_T")
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]"})


@dataclass(frozen=True, repr=False)
class CodeFlow:
    """One started code flow: what the browser opens and what its callback is checked against."""

    url: str
    state: str
    pkce: Pkce
    redirect_uri: str
    scopes: tuple[str, ...]
    endpoints: Endpoints

    def __repr__(self) -> str:
        return f"CodeFlow(redirect_uri={self.redirect_uri!r}, scopes={self.scopes!r})"


class OAuthClient:
    """The OAuth client of one grant (one ``[credentials.NAME.oauth]`` table)."""

    def __init__(self, spec: OAuthGrantSpec, http: OAuthHttp) -> None:
        self._spec = spec
        self._http = http
        self._preset = PRESETS[spec.preset] if spec.preset is not None else None
        self._lock = threading.Lock()
        self._endpoints: Endpoints | None = None

    def endpoints(self) -> Endpoints:
        """The grant's endpoints; the provider's metadata is read once (when ``issuer`` is set)."""
        with self._lock:
            if self._endpoints is None:
                self._endpoints = resolve(self._spec, self._preset, self._discover())
            return self._endpoints

    def begin_code(self, redirect_uri: str) -> CodeFlow:
        """A new code flow with PKCE S256 and a fresh ``state`` for ``redirect_uri``, which must
        be a loopback ``http://127.0.0.1:PORT/...`` (RFC 8252 section 7.3) or an https URL."""
        _check_redirect_uri(redirect_uri)
        endpoints = self.endpoints()
        pkce, state = new_pkce(), new_state()
        url = authorization_url(
            endpoints, self._spec.client_id, redirect_uri, endpoints.scopes, state, pkce.challenge
        )
        return CodeFlow(url, state, pkce, redirect_uri, endpoints.scopes, endpoints)

    def exchange_code(
        self,
        flow: CodeFlow,
        query: Mapping[str, str] | Sequence[tuple[str, str]],
        client_secret: SecretBytes | None,
    ) -> TokenGrant:
        """Check the callback ``query`` against ``flow`` and trade its code for tokens."""
        endpoints = flow.endpoints
        code = check_callback(
            query,
            state=flow.state,
            issuer=endpoints.issuer,
            iss_required=endpoints.iss_supported,
        )
        try:
            form: dict[str, FormValue] = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": flow.redirect_uri,
                "code_verifier": flow.pkce.verifier,
            }

            def step() -> TokenGrant:
                answer = self._post(endpoints.token, form, client_secret, endpoints)
                return parse_token_response(*_parts(answer), quirks=endpoints.quirks)

            return _quoting_nothing_sent(step, form, client_secret)
        finally:
            code.wipe()

    def device_start(self, client_secret: SecretBytes | None) -> DeviceAuthorization:
        """RFC 8628 section 3.1: ask for a device code and the user code the human enters."""
        endpoints = self.endpoints()
        device_url = endpoints.device
        if device_url is None:
            raise OAuthBadResponse("the provider has no device authorization endpoint")
        form: dict[str, FormValue] = {}
        if endpoints.scopes:
            form["scope"] = scope_text(endpoints.scopes, endpoints.quirks)

        def step() -> DeviceAuthorization:
            answer = self._post(device_url, form, client_secret, endpoints)
            return parse_device_response(*_parts(answer))

        return _quoting_nothing_sent(step, form, client_secret)

    def device_poll(
        self, device: DeviceAuthorization, client_secret: SecretBytes | None
    ) -> TokenGrant | DevicePending:
        """One poll of the token endpoint (RFC 8628 section 3.4); the caller waits
        ``device.interval`` between polls, 5 s more after each ``slow_down``."""
        endpoints = self.endpoints()
        form: dict[str, FormValue] = {"grant_type": DEVICE_GRANT, "device_code": device.device_code}

        def step() -> TokenGrant | DevicePending:
            answer = self._post(endpoints.token, form, client_secret, endpoints)
            return parse_device_poll(*_parts(answer), quirks=endpoints.quirks)

        return _quoting_nothing_sent(step, form, client_secret)

    def refresh(self, refresh_token: SecretBytes, client_secret: SecretBytes | None) -> TokenGrant:
        """A new access token (and perhaps a rotated refresh token) for ``refresh_token``."""
        endpoints = self.endpoints()
        form: dict[str, FormValue] = {"grant_type": "refresh_token", "refresh_token": refresh_token}

        def step() -> TokenGrant:
            answer = self._post(endpoints.token, form, client_secret, endpoints)
            return parse_token_response(*_parts(answer), quirks=endpoints.quirks)

        try:
            return _quoting_nothing_sent(step, form, client_secret)
        except OAuthRefused as exc:
            if exc.error == "invalid_grant":
                raise OAuthGrantDead(
                    "the provider refused the grant's refresh token (invalid_grant): it was "
                    "revoked, expired or already used",
                    error=exc.error,
                ) from None
            raise

    def revoke(
        self,
        token: SecretBytes,
        hint: Literal["refresh_token", "access_token"],
        client_secret: SecretBytes | None,
    ) -> bool:
        """RFC 7009: revoke ``token`` at the provider. False when the provider has no revocation
        endpoint; an answer other than 200 raises (the caller reports it)."""
        endpoints = self.endpoints()
        if endpoints.revocation is None:
            return False
        form: dict[str, FormValue] = {"token": token, "token_type_hint": hint}
        answer = self._post(endpoints.revocation, form, client_secret, endpoints)
        if answer.status != 200:
            raise OAuthBadResponse(f"the revocation endpoint answered HTTP {answer.status}")
        return True

    def _post(
        self,
        url: str,
        form: dict[str, FormValue],
        client_secret: SecretBytes | None,
        endpoints: Endpoints,
    ) -> RawResponse:
        # RFC 6749 section 2.3: a public client names itself; a confidential one authenticates
        # the way the provider takes. No secret given: the client id alone (the provider says
        # whether that is enough, e.g. GitHub's device flow).
        client_id = self._spec.client_id
        if client_secret is not None and endpoints.client_auth == "client_secret_basic":
            return self._http.post_form(url, form, basic=(client_id, client_secret))
        form = {"client_id": client_id, **form}
        if client_secret is not None and endpoints.client_auth != "none":
            form["client_secret"] = client_secret
        return self._http.post_form(url, form)

    def _discover(self) -> Metadata | None:
        issuer = self._spec.issuer
        if issuer is None:
            return None
        for url in metadata_urls(issuer):
            answer = self._http.get_json(url)
            if answer.status == 200:
                return parse_metadata(answer.body, issuer)
        has_token = self._spec.token_endpoint is not None or self._preset is not None
        if has_token:
            return None  # endpoints given by the policy or the preset; no metadata to add
        raise OAuthBadResponse("the provider publishes no metadata for the configured issuer")


def _quoting_nothing_sent(
    step: Callable[[], _T], form: Mapping[str, FormValue], client_secret: SecretBytes | None
) -> _T:
    """``step()``; an error it raises, without the provider's words if they quote a secret the
    request sent (the form's secrets, the client secret)."""
    cleaned: OAuthError | None = None
    try:
        return step()
    except OAuthError as exc:
        sent = [value for value in form.values() if isinstance(value, SecretBytes)]
        sent += [client_secret] if client_secret is not None else []
        cleaned = withheld_if_quoting(exc, sent)
        if cleaned is exc:
            raise
    # Raised outside the handler: the error that quoted the secret is not its context.
    raise cleaned


def _parts(answer: RawResponse) -> tuple[int, str | None, bytes]:
    return answer.status, answer.content_type, answer.body


def _check_redirect_uri(uri: str) -> None:
    try:
        parsed = exact_url(uri)
    except UrlRefused as exc:
        raise OAuthRefused(f"the redirect URI is refused: {exc.reason}") from None
    if parsed.query:
        raise OAuthRefused("the redirect URI may not hold a query")
    if parsed.scheme == "http" and parsed.host not in _LOOPBACK_HOSTS:
        # RFC 8252 section 8.3: a loopback literal, never "localhost" (a name another resolver
        # may answer) and never another host over plain http.
        raise OAuthRefused("an http redirect URI must be http://127.0.0.1:PORT/ or http://[::1]")
