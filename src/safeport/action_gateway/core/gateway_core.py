"""The gateway's use cases in one place: what `sp` and agents may ask, whatever the socket.

:class:`GatewayCore` owns the vault, the served policy, the approvals (and the security keys
that sign them), the ladder and the journals, and offers one method per thing a client does.
The socket handlers parse a request, call one of these and render the answer. It reacts to
vault events: unlock loads the accepted policy; lock voids every grant, drops pooled
connections, journals and signs the journal heads. It does no socket I/O.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping

from safeport.action_gateway.approvals.broker import Approvals
from safeport.action_gateway.approvals.cards import ApprovalCard
from safeport.action_gateway.approvals.connected_agents import ConnectedAgents
from safeport.action_gateway.approvals.desktop_notice import notify_card_waiting
from safeport.action_gateway.approvals.key_ring import KeyApprovals
from safeport.action_gateway.core.approval_desk import ApprovalDesk
from safeport.action_gateway.core.grant_desk import GrantDesk
from safeport.action_gateway.core.journal_wiring import journal_heads, open_records
from safeport.action_gateway.core.parts import GatewayParts, RuntimeLimits, admitted_uids
from safeport.action_gateway.core.remote_wiring import authorization_server
from safeport.action_gateway.core.vault_events import VaultEvents
from safeport.action_gateway.core.vault_state import (
    Unlocker,
    VaultState,
    should_auto_lock,
    unlock_name,
)
from safeport.action_gateway.executors import privileged_role_check
from safeport.action_gateway.identity.model import PeerIdentity
from safeport.action_gateway.ladder.credentials import CredentialSupply
from safeport.action_gateway.ladder.outcome import ProposalOutcome
from safeport.action_gateway.ladder.resolve import Proposal
from safeport.action_gateway.ladder.rungs import Ladder
from safeport.action_gateway.policy.catalog import catalog_of
from safeport.action_gateway.policy.rate_limits import RateLimiter
from safeport.action_gateway.policy.store import PolicyStore
from safeport.errors import Denied, Error
from safeport.shared.audit import JournalBody
from safeport.shared.exception_summary import summarize
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import results as rs
from safeport.shared.schemas import results_vault as rv
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.config import GatewaySettings
from safeport.vault.interface import EntryInfo, UnlockedVault, VaultPublicKeys
from safeport.vault.secrets import SecretBytes, SecretKind

log = logging.getLogger("safeport.gateway")

CredentialValue = Mapping[str, SecretBytes | str]


class GatewayCore:
    def __init__(self, paths: SafeportPaths, parts: GatewayParts, limits: RuntimeLimits) -> None:
        self._paths = paths
        self._parts = parts
        self._limits = limits
        self._started_at = time.time()
        # Names this run (status shows it, with the vault's epoch): a registration unlocks only
        # by naming it, so an approver left running from an earlier run cannot unlock this one.
        self.run_id = secrets.token_urlsafe(12)
        # Who may use either socket: this user, or the install's named humans.
        self.admitted_uids = admitted_uids(paths)
        self._records = records = open_records(paths, parts, limits, lambda: self._policies.served)
        self._journals, self._refusals = records.journals, records.refusals
        self._vault = VaultState(parts.vault_store)
        self._policies = PolicyStore(paths.gateway_config)
        humans = len(self.admitted_uids)
        self._approvals = Approvals(self._journals.sessions, parts.probe, humans=humans)
        self._credentials = CredentialSupply(
            parts.sources,
            self._journals,
            records.evidence,
            paths,
            grant_clients=parts.grant_clients,
        )
        self._ladder = Ladder(
            probe=parts.probe,
            policies=self._policies,
            vault=self._vault,
            approvals=self._approvals,
            journal=self._journals.actions,
            executor=parts.executor,
            rates=RateLimiter(humans=humans),
            admitted_uids=self.admitted_uids,
            budget=self._refusals.budget,
            space=self._refusals.space.low_reason,
            remote_caller=lambda token: self.remote.remote_caller(token).label,
            credentials=self._credentials,
        )
        self._agents = ConnectedAgents()
        # What the humans ask of cards and sessions (approval_desk.py).
        self.approvals = ApprovalDesk(self._approvals, self._agents, self._vault, self.settings)
        self._events = VaultEvents(
            self._vault,
            self._records,
            self._policies,
            self._credentials,
            self._approvals,
            parts.executor,
        )
        self.keys = KeyApprovals(self._vault, self._policies, self._events.record_save)
        # `sp oauth connect` and the revocation before `sp vault remove` (grant_desk.py).
        self.grants = GrantDesk(self._vault, self._policies, self._credentials, self._events)
        self._approvals.subscribe(notify_card_waiting)
        self.remote = authorization_server(
            self, self._vault, self._approvals, self._policies, paths, parts.remote_fetch
        )

    def settings(self) -> GatewaySettings:
        served = self._policies.served
        return served.policy.gateway if served else GatewaySettings()

    def max_connections(self) -> int:  # agent.sock's budget (the policy's max_connections)
        return self.settings().max_connections

    def control_max_connections(self) -> int:  # control.sock's own; agents never count in it
        return self._limits.server.control_max_connections

    @property
    def serves_several_humans(self) -> bool:
        return len(self.admitted_uids) > 1

    # -- agents -------------------------------------------------------------------------------

    def agent_connected(self, key: int, peer: PeerIdentity) -> None:
        self._agents.add(key, peer)

    def agent_left(self, key: int) -> None:
        self._agents.remove(key)

    def propose(
        self, peer: PeerIdentity, proposal: Proposal, cancel: threading.Event
    ) -> ProposalOutcome:
        """The whole decision ladder for one proposal (blocking: approvals wait for a human)."""
        return self._ladder.propose(peer, proposal, cancel)

    def withdraw(self, peer: PeerIdentity, request_id: str) -> bool:
        return self._approvals.withdraw(peer, request_id)

    def on_card_opened(self, callback: Callable[[ApprovalCard], None]) -> None:
        self._approvals.on_card_opened(callback)

    def catalog(self) -> Catalog:
        """What the served policy lets agents propose; the vault's lock is what to fix first."""
        served = self._policies.served
        if served is None:
            self._vault.current()  # VaultLocked while locked
            raise Denied("no accepted policy is being served")
        return catalog_of(served.policy, served.digest)

    def reply_cap(self) -> int | None:
        served = self._policies.served
        return served.reply_cap if served is not None else None

    # -- the vault ----------------------------------------------------------------------------

    @property
    def vault_unlocked(self) -> bool:
        return self._vault.unlocked

    def create_vault(self, passphrase: SecretBytes) -> VaultPublicKeys:
        """`sp vault init` through the gateway (its account alone may write the vault file)."""
        keys = self._vault.create(passphrase)
        self._records.sealing.created(self._journals, keys)
        self.record_session("vault.created", {"checkpoint_signer": keys.checkpoint_fingerprint})
        return keys

    def vault_epoch(self) -> int:
        return self._vault.epoch

    def unlock_name(self) -> str:
        """This run and the vault's state within it (the epoch moves at each unlock and lock):
        what an approver names to unlock on registering. A name read before the last lock
        (an earlier run, or `sp vault lock` since) never unlocks: only the lock it found."""
        return unlock_name(self.run_id, self._vault.epoch)

    def prove_passphrase(
        self,
        passphrase: SecretBytes,
        by: Unlocker | None = None,
        *,
        unlock: bool = True,
        at_epoch: int | None = None,
    ) -> None:
        """Raise unless it is the vault's passphrase; with ``unlock``, a locked vault is
        unlocked with it (without, it stays locked; with ``at_epoch``, only if the vault's
        epoch is still that one)."""
        self._vault.prove(passphrase, by, unlock=unlock, at_epoch=at_epoch)

    def unlock_with_keyring(self, by: Unlocker | None = None) -> bool:
        return self._vault.unlock_with_keyring(by)

    def lock(self, reason: str) -> bool:
        """Lock now (no-op when locked): grants end, pooled connections close, heads are signed."""
        return self._vault.lock(reason)

    def lock_if_idle(self) -> None:
        idle = self._vault.idle_for()
        if should_auto_lock(self._vault.unlocked, idle, self.settings().auto_lock_minutes):
            self._vault.lock("idle")

    def describe_vault(self) -> rv.VaultDescribeResult:
        return self._vault.describe()

    def public_file_view(self) -> rv.PublicFileState | None:
        return self._vault.public_file_view()

    def entries(self) -> list[EntryInfo]:
        vault, _ = self._vault.current()
        return vault.entries()

    def add_credential(self, name: str, kind: SecretKind, value: CredentialValue) -> None:
        vault, _ = self._vault.current()
        vault.add(name, kind, value)
        self._events.record_save("vault.entry_added", {"name": name, "kind": kind}, vault)

    def rotate_credential(self, name: str, value: CredentialValue) -> None:
        vault, _ = self._vault.current()
        with self.grants.rotating(name, vault):
            vault.rotate(name, value)
        # Pooled connections authenticated with the old value must not outlive it.
        self._parts.executor.close_all()
        self._events.record_save("vault.entry_rotated", {"name": name}, vault)

    def remove_credential(self, name: str) -> None:
        vault, _ = self._vault.current()
        vault.remove(name)
        self._parts.executor.close_all()
        self._events.record_save("vault.entry_removed", {"name": name}, vault)

    # -- the policy ---------------------------------------------------------------------------

    def policy_status(self) -> rs.PolicyState:
        return self._policies.status()

    def policy_snapshot(self) -> rs.PolicySnapshot:
        """The status with the text served and the text on disk (one read), for `sp policy`."""
        return self._policies.snapshot()

    def accept_policy(self, shown_digest: str, text: str | None) -> str:
        """Serve gateway.toml (or ``text``) if it is exactly the text whose digest was shown."""
        vault, _ = self._vault.current()
        inspect = privileged_role_check(self._parts.executor, vault.secret)
        served = self._policies.accept(vault, shown_digest, text=text, inspect=inspect)
        self._events.record_save("policy.accepted", {"policy": served.digest}, vault)
        return served.digest

    def reload(self, uid: int | None = None) -> rs.PolicyState:
        """SIGHUP (``uid`` None) / `sp gateway reload`: re-read the accepted policy and file."""
        with contextlib.suppress(Error):  # locked: there is nothing accepted to re-read
            vault, _ = self._vault.current()
            self._policies.load_accepted(vault)
        status = self._policies.status()
        self.record_session_by(uid, "gateway.reloaded", status.model_dump())
        if status.pending:
            log.warning("gateway.toml differs from the accepted policy; run `sp policy accept`")
        return status

    def approver_started(self, peer: PeerIdentity) -> None:
        self.record_session("approver.started", {"approver": peer.as_record()})

    # -- journals and housekeeping ------------------------------------------------------------

    def record_session(self, kind: str, body: JournalBody) -> None:
        self._journals.sessions.record(kind, body)

    def record_refused(self, uid: int, category: str, kind: str, body: JournalBody) -> None:
        """A requester's junk or refusal: whole within its uid's budget, else only counted."""
        self._refusals.refused(uid, category, kind, body)

    def record_session_by(self, uid: int | None, kind: str, body: JournalBody) -> None:
        self._refusals.session_by(uid, kind, body)  # within the uid's budget (RefusalRecords)

    def count_refusal(self, category: str) -> None:
        """A connection refused before it was served: counted, journaled once per period."""
        self._refusals.noise.add(category)

    def flush_noise(self, *, everything: bool = False) -> None:
        self._refusals.flush(everything=everything)

    def reap(self) -> None:
        self._approvals.reap()

    def check_sources(self) -> rs.SourcesCheckResult:  # sp doctor: no value is read
        checks = self._credentials.doctor(self._policies.served, self._vault.current()[0])
        return rs.SourcesCheckResult(checks=checks)

    def inspect_at_start(self) -> None:
        """Before anything is served: judge the journals, learn the highest generation."""
        self._records.inspect_at_start(self._parts.vault_store.public_keys)

    def checkpoint(self, vault: UnlockedVault | None = None, *, if_moved: bool = False) -> None:
        """Sign the heads (``if_moved``: if one moved since); nothing to sign with while locked."""
        self._events.checkpoint(vault, if_moved=if_moved)

    def checkpoint_view(self) -> rs.CheckpointResult:
        """The latest signed heads, in the format of checkpoint.json."""
        return self._records.checkpoints.view()

    def status(self) -> rs.StatusResult:
        """What `sp status` shows of this run."""
        return rs.StatusResult(
            pid=os.getpid(),
            account=self._paths.install.account if self._paths.install else None,
            uptime_s=round(time.time() - self._started_at),
            run=self.unlock_name(),
            vault="unlocked" if self._vault.unlocked else "locked",
            policy=self._policies.status(),
            sessions=len(self._approvals.sessions()),
            pending_cards=len(self._approvals.cards()),
            journals=journal_heads(self._journals),
            alarms=[rs.Alarm.model_validate(alarm) for alarm in self._records.evidence.alarms],
            journal_space=self._refusals.view(),
            timestamps=self._records.checkpoints.stamper_state(),
            dead_grants=self.grants.dead() or None,
        )

    def stop(self) -> None:
        """The end of a run: grants voided, the last counts journaled, the vault locked."""
        self._approvals.void_all("gateway stopped")
        try:
            self.flush_noise(everything=True)
        except Exception as exc:  # the stop goes on; only the last noise counts are lost
            log.warning("the refusal counts could not be journaled at stop: %s", summarize(exc))
        self.record_session("gateway.stopped", {"pid": os.getpid()})
        self._vault.lock("gateway stopped")
        self._events.close_pooled("at stop")

    def close(self) -> None:
        self._records.checkpoints.close()
        self._journals.close()
