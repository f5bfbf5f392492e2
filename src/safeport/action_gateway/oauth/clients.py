"""The provider client of each oauth credential of the served policy, kept while its table is
unchanged: discovery is read once per grant, and a new table (an accepted policy that changed
the issuer, the endpoints or the CA) gets a new client, never the old one's cached endpoints."""

from __future__ import annotations

import threading

from safeport.action_gateway.oauth.client import OAuthClient
from safeport.action_gateway.oauth.errors import OAuthBadResponse
from safeport.action_gateway.oauth.transport import OAuthHttp
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.config_oauth import OAuthGrantSpec


class ProviderClients:
    """``GrantClients`` for the gateway: ``clients(policy, name)`` is grant ``name``'s client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[OAuthGrantSpec, OAuthClient, OAuthHttp]] = {}

    def __call__(self, policy: GatewayPolicy, name: str) -> OAuthClient:
        credential = policy.credentials.get(name)
        spec = None if credential is None else credential.oauth
        if spec is None:
            raise OAuthBadResponse(f"credential {name!r} has no [oauth] table in the policy")
        with self._lock:
            held = self._clients.get(name)
            if held is not None and held[0] == spec:
                return held[1]
            http = OAuthHttp(
                spec.ca_file,
                spec.timeout_s,
                spec.max_response_bytes,
                allow_private=spec.allow_private_addresses,
            )
            client = OAuthClient(spec, http)
            self._clients[name] = (spec, client, http)
        if held is not None:
            held[2].close()
        return client

    def close(self) -> None:
        with self._lock:
            held, self._clients = list(self._clients.values()), {}
        for _, _, http in held:
            http.close()
