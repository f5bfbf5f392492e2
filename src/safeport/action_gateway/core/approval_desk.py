"""What the humans' side of the gateway asks of approvals: cards, their decisions, sessions.

:class:`ApprovalDesk` is the part of the gateway's use cases (:mod:`gateway_core`) that an
approver (`sp approvals`, `sp sessions`, a passphrase or key prompt) reaches: it refuses a
human-only request from inside a connected agent's process tree, lists and decides cards, and
lists and revokes open sessions. It does no socket I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from safeport.action_gateway.approvals.broker import Approvals, Listener
from safeport.action_gateway.approvals.cards import ApprovalCard
from safeport.action_gateway.approvals.connected_agents import ConnectedAgents
from safeport.action_gateway.core.vault_state import VaultState
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.shared.schemas import results as rs
from safeport.shared.schemas.config import GatewaySettings


class ApprovalDesk:
    def __init__(
        self,
        approvals: Approvals,
        agents: ConnectedAgents,
        vault: VaultState,
        settings: Callable[[], GatewaySettings],
    ) -> None:
        self._approvals = approvals
        self._agents = agents
        self._vault = vault
        self._settings = settings

    def check_approver(self, peer: PeerIdentity) -> None:
        """Refuse a human-only request from inside any connected agent's process tree."""
        allow = self._settings().allow_approver_in_client
        self._agents.check_approver(peer, allow_in_client=allow)

    def card_views(self) -> list[rs.CardView]:
        return self._approvals.card_views()

    def decide_card(self, card_id: str, approve: bool, approver: PeerIdentity) -> ApprovalCard:
        allow = self._settings().allow_approver_in_client
        card = self._approvals.decide(card_id, approve, approver, allow_in_client=allow)
        self._vault.touch()
        return card

    def watch_cards(self, listener: Listener) -> None:
        self._approvals.subscribe(listener)

    def unwatch_cards(self, listener: Listener) -> None:
        self._approvals.unsubscribe(listener)

    def session_views(self, *, of_uid: int | None = None) -> list[rs.SessionView]:
        """Open sessions as `sp sessions list` shows them; only one uid's when ``of_uid``."""
        now = time.monotonic()
        grants = self._approvals.sessions()
        return [g.view(now) for g in grants if of_uid is None or g.requester.uid == of_uid]

    def session_owner(self, session_id: str) -> int | None:
        return {g.id: g.requester.uid for g in self._approvals.sessions()}.get(session_id)

    def revoke_session(self, session_id: str, *, by: str) -> str:
        return self._approvals.revoke(session_id, by=by).id
