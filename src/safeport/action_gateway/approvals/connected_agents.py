"""The agents connected on agent.sock right now: whose process trees a human-only request on
control.sock (a passphrase, a decision) must not come from."""

from __future__ import annotations

import threading

from safeport.action_gateway.approvals.approver_rules import check_approver
from safeport.action_gateway.identity.model import PeerIdentity


class ConnectedAgents:
    def __init__(self) -> None:
        self._peers: dict[int, PeerIdentity] = {}
        self._lock = threading.Lock()

    def add(self, key: int, peer: PeerIdentity) -> None:
        with self._lock:
            self._peers[key] = peer

    def remove(self, key: int) -> None:
        with self._lock:
            self._peers.pop(key, None)

    def check_approver(self, approver: PeerIdentity, *, allow_in_client: bool) -> None:
        """Raise unless ``approver`` is outside every connected agent's tree and client."""
        with self._lock:
            requesters = list(self._peers.values())
        for requester in requesters:
            check_approver(approver, requester, allow_in_client=allow_in_client)
