"""What the human's `sp oauth connect` and `sp vault remove` ask of the gateway's OAuth grants.

A connect begins a flow (:mod:`safeport.action_gateway.oauth.flows`) for an oauth credential of
the accepted policy, and ends by trading the browser's callback (or the device code) for tokens
at the provider: the refresh token, the client secret given at the start, the scopes granted
and the issuer go into the vault entry of the credential's name (added, or replaced when it was
connected before), and the access token to the broker's memory. `sp` gets the scopes, never a
token. Removing a grant revokes its token at the provider first (RFC 7009) when the provider
has a revocation endpoint; a revocation that fails is reported and the entry removed anyway.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from safeport.action_gateway.core.vault_events import VaultEvents
from safeport.action_gateway.core.vault_state import VaultState
from safeport.action_gateway.ladder.credentials import CredentialSupply, Journal
from safeport.action_gateway.oauth.flows import ConnectClient, Flow, FlowBook
from safeport.action_gateway.oauth.protocol import DevicePending, TokenGrant, granted_scopes
from safeport.action_gateway.policy.store import PolicyStore
from safeport.errors import Error
from safeport.shared.schemas import grant_wire as gw
from safeport.shared.schemas.results import DeadGrantView
from safeport.vault.secrets import OAuthSecret, SecretBytes


class GrantDesk:
    def __init__(
        self,
        vault: VaultState,
        policies: PolicyStore,
        credentials: CredentialSupply,
        events: VaultEvents,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._vault = vault
        self._policies = policies
        self._credentials = credentials
        self._journal: Journal = credentials.journal
        self._record_save = events.record_save
        credentials.grants.record_save = events.record_save
        self._clock = clock
        self._sleep = sleep
        self.flows: FlowBook = credentials.flows

    # -- connecting ---------------------------------------------------------------------------

    def begin(
        self,
        name: str,
        uid: int,
        *,
        redirect_uri: str | None,
        device: bool,
        client_secret: SecretBytes | None,
    ) -> gw.OAuthBegunResult:
        """A new flow for the oauth credential ``name``; the secret is the flow's from now on
        (wiped with it, or at once when the flow cannot begin)."""
        try:
            self._vault.current()  # a connect ends in a vault save: refuse it while locked
            client = self._client(name)
            endpoints = client.endpoints()
        except BaseException:
            if client_secret is not None:
                client_secret.wipe()
            raise
        flow = Flow(name, uid, endpoints.scopes, client, client_secret)
        try:
            if device:
                flow.device = client.device_start(flow.client_secret)
                flow.interval = float(flow.device.interval)
                flow.next_poll = self._clock() + flow.interval
                flow.device_expires = self._clock() + flow.device.expires_in
            else:
                if redirect_uri is None:
                    raise Error("a code flow needs the loopback redirect_uri `sp` listens on")
                flow.code = client.begin_code(redirect_uri)
        except BaseException:
            flow.wipe()
            raise
        self.flows.add(flow)
        scopes = list(endpoints.scopes)
        if flow.device is None:
            assert flow.code is not None
            return gw.OAuthBegunResult(
                flow_id=flow.id, scopes=scopes, authorization_url=flow.code.url
            )
        found = flow.device
        return gw.OAuthBegunResult(
            flow_id=flow.id,
            scopes=scopes,
            user_code=found.user_code,
            verification_uri=found.verification_uri,
            verification_uri_complete=found.verification_uri_complete,
            interval=found.interval,
            expires_in=found.expires_in,
        )

    def finish(self, flow_id: str, uid: int, query: dict[str, str]) -> gw.OAuthConnectedResult:
        """Trade the browser's callback for the grant (the flow is spent either way)."""
        flow = self.flows.take(flow_id, uid)
        try:
            if flow.code is None:
                raise Error("this flow is a device flow; wait on it with oauth.device_wait")
            grant = flow.client.exchange_code(flow.code, query, flow.client_secret)
            scopes = self._store(flow, grant, "code")
        finally:
            flow.wipe()
        return gw.OAuthConnectedResult(name=flow.name, scopes=list(scopes))

    def device_wait(self, flow_id: str, uid: int, wait_s: int) -> gw.OAuthDeviceStateResult:
        """Poll the provider at its interval for up to ``wait_s`` seconds."""
        flow = self.flows.get(flow_id, uid)
        if flow.device is None:
            raise Error("this flow is a code flow; finish it with oauth.finish")
        if not flow.waiting.acquire(blocking=False):
            raise Error("this device flow is already being waited on")
        try:
            return self._poll_until(flow, self._clock() + wait_s)
        finally:
            flow.waiting.release()

    def _poll_until(self, flow: Flow, deadline: float) -> gw.OAuthDeviceStateResult:
        assert flow.device is not None
        while True:
            now = self._clock()
            if now >= flow.device_expires:
                self.flows.drop(flow)
                raise Error("the device code expired before it was entered; connect again")
            if flow.next_poll > deadline:
                return gw.OAuthDeviceStateResult(state="pending", name=flow.name)
            self._sleep(max(0.0, flow.next_poll - now))
            try:
                answer = flow.client.device_poll(flow.device, flow.client_secret)
            except Error:
                self.flows.drop(flow)  # refused, expired or a broken answer: start again
                raise
            if isinstance(answer, DevicePending):
                # RFC 8628 section 3.5: slow_down adds 5 seconds to every later interval.
                flow.interval += 5.0 if answer.slow_down else 0.0
                flow.next_poll = self._clock() + flow.interval
                flow.device_expires = self._clock() + flow.device.expires_in
                continue
            try:
                scopes = self._store(flow, answer, "device")
            finally:
                self.flows.drop(flow)
            return gw.OAuthDeviceStateResult(state="connected", name=flow.name, scopes=list(scopes))

    def _store(self, flow: Flow, grant: TokenGrant, how: str) -> tuple[str, ...]:
        """Write the grant into the vault, hand its access token to the broker, journal it."""
        name = flow.name
        endpoints = flow.client.endpoints()
        scopes = granted_scopes(grant, flow.scopes)
        value: dict[str, SecretBytes | str] = {"scopes": " ".join(scopes)}
        if grant.refresh_token is not None:
            value["refresh_token"] = grant.refresh_token
        else:
            # No refresh token (a GitHub OAuth app): the access token is all there is to keep.
            value["access_token"] = grant.access_token
        if flow.client_secret is not None:
            value["client_secret"] = flow.client_secret
        if endpoints.issuer is not None:
            value["issuer"] = endpoints.issuer
        try:
            vault, _ = self._vault.current()
            if any(entry.name == name for entry in vault.entries()):
                vault.rotate(name, value)  # a kind other than oauth is refused by the vault
                self._record_save("vault.entry_rotated", {"name": name}, vault)
            else:
                vault.add(name, "oauth", value)
                self._record_save("vault.entry_added", {"name": name, "kind": "oauth"}, vault)
        except BaseException:
            grant.wipe()
            raise
        if grant.refresh_token is not None:
            grant.refresh_token.wipe()
        grants = self._credentials.grants
        grants.connected(name, grant.access_token, grant.expires_in, flow.client)
        body = {"grant": name, "issuer": endpoints.issuer, "scopes": list(scopes), "flow": how}
        self._journal.record("oauth.connected", {**body, "expires_in": grant.expires_in})
        return scopes

    # -- removing, and what status shows ------------------------------------------------------

    def revoke(self, name: str) -> str | None:
        """Revoke the grant ``name`` at its provider before its entry is removed: None when it
        is revoked, not a grant, or its provider has no revocation endpoint; else the problem
        (reported, and the entry is removed anyway: the human asked for it gone)."""
        vault, _ = self._vault.current()
        if not any(e.name == name and e.kind == "oauth" for e in vault.entries()):
            return None
        stored = vault.secret(name)
        assert isinstance(stored, OAuthSecret)
        about: dict[str, object] = {"grant": name, "issuer": stored.issuer}
        about["scopes"] = list(stored.scopes)
        try:
            client = self._client(name)
            if stored.refresh_token is not None:
                revoked = client.revoke(stored.refresh_token, "refresh_token", stored.client_secret)
            elif stored.access_token is not None:
                revoked = client.revoke(stored.access_token, "access_token", stored.client_secret)
            else:
                revoked = False
        except Error as exc:
            self._journal.record("oauth.revoke_failed", {**about, "reason": exc.message})
            return f"the grant could not be revoked at its provider: {exc.message}"
        finally:
            stored.wipe()
            self._credentials.grants.forget(name)
        if revoked:
            self._journal.record("oauth.revoked", about)
        return None

    def dead(self) -> list[DeadGrantView]:
        return [
            DeadGrantView(
                name=dead.name,
                issuer=dead.issuer,
                since=datetime.fromtimestamp(dead.since, UTC).isoformat(),
                reason=dead.reason,
            )
            for dead in self._credentials.grants.dead()
        ]

    def _client(self, name: str) -> ConnectClient:
        served = self._policies.served
        credential = None if served is None else served.policy.credentials.get(name)
        if served is None or credential is None or credential.oauth is None:
            raise Error(
                f"{name!r} is not an oauth credential of the accepted policy",
                hint=f'declare [credentials.{name}] with kind = "oauth" and accept the policy',
            )
        client = self._credentials.grant_clients(served.policy, name)
        if not isinstance(client, ConnectClient):
            raise Error(f"the gateway has no OAuth client for {name!r}")
        return client
