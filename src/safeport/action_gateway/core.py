"""The gateway's state in one place: vault, served policy, approvals, ladder, journals.

:class:`GatewayCore` wires the pieces together and reacts to vault events (unlock loads the
accepted policy; lock voids every grant, drops pooled connections, journals and signs the
journal heads). It does no socket I/O; the servers and the daemon loop drive it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from safeport.action_gateway.approvals import Approvals
from safeport.action_gateway.checkpoint_syslog import (
    LOCAL_SOCKET,
    SyslogSender,
    SyslogTarget,
    format_heads,
)
from safeport.action_gateway.evidence import HeadFinding, check_head, scan_refs
from safeport.action_gateway.executors.interface import Executor
from safeport.action_gateway.identity import IdentityProbe, PeerIdentity
from safeport.action_gateway.journals import GatewayJournals, NoiseCounter
from safeport.action_gateway.ladder import Ladder, RateLimiter
from safeport.action_gateway.notifications import notify_card_waiting
from safeport.action_gateway.policy_store import PolicyStore
from safeport.action_gateway.server import ServerLimits
from safeport.action_gateway.vault_state import VaultState
from safeport.errors import Error
from safeport.shared.audit import BodySealer, JournalHead
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewaySettings
from safeport.vault.checkpoints import (
    CheckpointInvalid,
    dump_checkpoints,
    load_checkpoints,
    verify_checkpoint,
)
from safeport.vault.interface import (
    Checkpoint,
    UnlockedVault,
    VaultEvidence,
    VaultPublicKeys,
    VaultStore,
)

log = logging.getLogger("safeport.gateway")


@dataclass(frozen=True)
class GatewayParts:
    """What the gateway is built from; tests and benchmarks pass their own executor."""

    vault_store: VaultStore
    executor: Executor
    probe: IdentityProbe
    sealer_for: Callable[[VaultPublicKeys], BodySealer] | None = None
    syslog_local_path: str = LOCAL_SOCKET


@dataclass(frozen=True)
class RuntimeLimits:
    server: ServerLimits = field(default_factory=ServerLimits)
    reap_interval_s: float = 1.0
    noise_interval_s: float = 1.0
    checkpoint_interval_s: float = 300.0
    worker_threads: int = 64


class _SessionsJournal:
    """The approvals' view of sessions.jsonl (durable before the step proceeds)."""

    def __init__(self, journals: GatewayJournals) -> None:
        self._journals = journals

    def record(self, kind: str, body: dict[str, object]) -> None:
        self._journals.sessions.record(kind, body)


class GatewayCore:
    def __init__(self, paths: SafeportPaths, parts: GatewayParts, limits: RuntimeLimits) -> None:
        self.paths = paths
        self.parts = parts
        self.limits = limits
        self.started_at = time.time()
        self.gateway_uid = os.geteuid()
        self._sealed_to: VaultPublicKeys | None = None
        # The highest vault generation seen: journaled after each unlock and each of our own
        # saves (ref.generation), learned back from sessions.jsonl at start.
        self._highest_generation = -1
        # Signed heads a journal on disk contradicts: kept in checkpoint.json for good, so
        # `sp audit verify --checkpoint` fails even after new heads are signed past the cut.
        self._contradicted: list[Checkpoint] = []
        self._reported: set[tuple[str, int, str]] = set()
        self.alarms: list[dict[str, object]] = []
        self._syslog: SyslogSender | None = None
        self._external_seen: dict[str, int] = {}
        self.journals = GatewayJournals(paths.audit_dir, self._sealer())
        self.vault = VaultState(parts.vault_store)
        self.policies = PolicyStore(paths.gateway_config)
        self.approvals = Approvals(_SessionsJournal(self.journals), parts.probe)
        self.rates = RateLimiter()
        self.noise = NoiseCounter()
        # Proposals may wait minutes for a human, each holding a worker; everything a human or
        # the housekeeping needs runs on its own small pool, so waiting proposals can never
        # starve the approver who would release them.
        self.pool = ThreadPoolExecutor(max_workers=limits.worker_threads, thread_name_prefix="sp")
        self.control_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sp-control")
        # Identities are read in worker threads (digests of executables and scripts can take a
        # while); agent.sock and control.sock each have their own, so agents whose identity is
        # slow to read never delay the human's `sp`.
        self.identity_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sp-identity")
        self.control_identity_pool = ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="sp-control-identity"
        )
        self.ladder = Ladder(
            probe=parts.probe,
            policies=self.policies,
            vault=self.vault,
            approvals=self.approvals,
            journal=self.journals.actions,
            executor=parts.executor,
            rates=self.rates,
            gateway_uid=self.gateway_uid,
        )
        self.checkpoints: dict[str, Checkpoint] = {}
        self.agent_peers: dict[int, PeerIdentity] = {}
        self._checkpoint_lock = threading.Lock()
        self.approvals.subscribe(notify_card_waiting)
        self.vault.on_unlock(self._unlocked)
        self.vault.on_lock(self._locked)

    # -- settings -----------------------------------------------------------------------------

    def settings(self) -> GatewaySettings:
        served = self.policies.served
        return served.policy.gateway if served else GatewaySettings()

    def max_connections(self) -> int:
        """agent.sock's budget (the policy's ``max_connections``)."""
        return self.settings().max_connections

    def control_max_connections(self) -> int:
        """control.sock's own budget; agent connections never count against it."""
        return self.limits.server.control_max_connections

    # -- events -------------------------------------------------------------------------------

    def record_session(self, kind: str, body: dict[str, object]) -> None:
        self.journals.sessions.record(kind, body)

    def _unlocked(self, vault: UnlockedVault) -> None:
        generation = vault.generation
        evidence = vault.evidence()
        seen = self._highest_generation
        if evidence is not None:
            seen = max(seen, evidence.highest_generation)
        self.journals.sessions.record(
            "vault.unlocked",
            {"epoch": self.vault.epoch, "vault_generation": generation},
            ref={"generation": generation},
        )
        if generation < seen:
            # An older vault.sp was put back: rotated-out secrets and an older accepted policy
            # come back with it. Say so loudly; the human decides.
            log.error("the vault file is older than the one unlocked before (rollback?)")
            self._alarm(
                "vault.rollback",
                {"alarm": True, "generation": generation, "seen": seen},
                ref={"generation": seen},
            )
        self._highest_generation = max(seen, generation)
        if evidence is not None:
            self._compare_heads(evidence.heads, source="vault")
        self._check_public_keys(vault)
        try:
            served = self.policies.load_accepted(vault)
        except Error as exc:
            log.error("the accepted policy could not be loaded: %s", exc.diagnostic())
            self.record_session("policy.invalid", {"reason": exc.message[:300]})
            return
        if served is not None:
            self.record_session("policy.served", {"policy": served.digest})

    def _locked(self, reason: str, vault: UnlockedVault) -> None:
        ended = self.approvals.void_all("vault locked")
        try:
            self.parts.executor.close_all()
        except Exception as exc:  # the lock stands; pooled connections die with their keys
            log.warning("closing pooled connections failed on lock: %s", type(exc).__name__)
        self.record_session("vault.locked", {"reason": reason, "sessions_ended": ended})
        self.checkpoint(vault)

    def record_vault_save(self, kind: str, body: dict[str, object], vault: UnlockedVault) -> None:
        """Journal one of the gateway's own saves with the generation it reached, so putting
        back the file as it was before the save is a rollback, across restarts too."""
        generation = vault.generation
        self._highest_generation = max(self._highest_generation, generation)
        self.journals.sessions.record(kind, body, ref={"generation": generation})
        # Signed at once: until a head covers this record, a kill and a cut could remove it
        # along with the newer file's only trace.
        self.checkpoint(vault)

    # -- evidence from earlier runs -----------------------------------------------------------

    def inspect_at_start(self) -> None:
        """Before anything is served: compare the journals with the heads signed before, learn
        the highest vault generation journaled, and close intents that never got an outcome."""
        latest: dict[str, Checkpoint] = {}
        for checkpoint in sorted(self._recorded_checkpoints(), key=_signing_order):
            earlier = latest.get(checkpoint.journal)
            if earlier is not None:
                # Only an earlier alarm leaves two heads of one journal: carry its evidence on.
                self._contradicted.append(earlier)
            latest[checkpoint.journal] = checkpoint
        for journal in (self.journals.sessions, self.journals.actions):
            signed = latest.get(journal.name)
            if signed is None:
                continue
            if self._compare_heads({journal.name: signed.head}, source="checkpoint.json"):
                self.checkpoints[journal.name] = signed
            else:
                self._contradicted.append(signed)
        for journal in (self.journals.sessions, self.journals.actions):
            # The next checkpoint signs what each journal holds now, even one this run never
            # writes: a cut journal gets a later head beside the contradicted one (the next
            # start knows that cut is on record), and verify sees the two disagree.
            journal.read_head()
        refs = scan_refs(self.journals.sessions.path)
        self._highest_generation = max(self._highest_generation, refs.highest_generation)
        for intent in scan_refs(self.journals.actions.path).open_intents:
            log.warning("intent %d has no outcome: the gateway stopped in between", intent.seq)
            self.journals.actions.record(
                "action.interrupted",
                {
                    "intent_seq": intent.seq,
                    "intent_hash": intent.hash,
                    "outcome": "unknown",
                    "reason": "the gateway stopped between the intent and its outcome",
                },
                ref={"intent": intent.seq},
            )

    def _recorded_checkpoints(self) -> list[Checkpoint]:
        """The genuine signed heads in checkpoint.json (none if it is absent)."""
        path = self.paths.audit_dir / "checkpoint.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            self._alarm("checkpoint.invalid", {"alarm": True, "detail": exc.strerror or "unread"})
            return []
        try:
            keys = self.parts.vault_store.public_keys()
        except Error:
            return []  # no vault (yet): nothing to check the signatures with
        try:
            checkpoints = load_checkpoints(data, source=path.name)
            for checkpoint in checkpoints:
                verify_checkpoint(checkpoint, keys)
        except CheckpointInvalid as exc:
            # Forged, from another vault, or damaged: none of its heads can be relied on.
            self._alarm("checkpoint.invalid", {"alarm": True, "detail": exc.message[:300]})
            return []
        return checkpoints

    def _compare_heads(self, heads: Mapping[str, JournalHead], *, source: str) -> bool:
        """Alarm for every journal that no longer holds its recorded head; True if all do."""
        journals = {j.name: j for j in (self.journals.sessions, self.journals.actions)}
        clean = True
        for name, head in sorted(heads.items()):
            journal = journals.get(name)
            if journal is None:
                continue
            finding = check_head(journal.path, name, head)
            if finding is None:
                continue
            clean = False
            self._alarm_head(finding, source)
        return clean

    def _alarm_head(self, finding: HeadFinding, source: str) -> None:
        key = (finding.journal, finding.signed.seq, finding.signed.hash)
        if key in self._reported:
            return  # the same cut, seen again through the vault's copy of the head
        self._reported.add(key)
        log.error(
            "journal %s no longer holds the head signed at sequence %d: %s",
            finding.journal,
            finding.signed.seq,
            finding.detail,
        )
        self._alarm(finding.alarm, finding.as_record(source))

    def _alarm(
        self, kind: str, body: dict[str, object], *, ref: dict[str, int] | None = None
    ) -> None:
        self.journals.sessions.record(kind, body, ref=ref)
        self.alarms.append({"kind": kind, "at": time.time(), **body})

    def _check_public_keys(self, vault: UnlockedVault) -> None:
        """vault.pub.json is outside the vault and could be swapped to seal records to someone
        else's key: compare it with the keys inside, raise an alarm, and seal to the real one."""
        if self.parts.sealer_for is None:
            return
        inner = vault.public_keys()
        if self._sealed_to is not None and inner != self._sealed_to:
            log.error(
                "vault.pub.json does not hold this vault's public keys; sealing to the vault's"
            )
            self.record_session("vault.public_keys_mismatch", {"alarm": True})
        if inner != self._sealed_to:
            self.journals.set_sealer(self.parts.sealer_for(inner))
            self._sealed_to = inner

    def reload(self) -> dict[str, object]:
        """SIGHUP / `sp gateway reload`: re-read the accepted policy and the file's state."""
        with contextlib.suppress(Error):
            vault, _ = self.vault.current()
            self.policies.load_accepted(vault)
        status = self.policies.status()
        self.record_session("gateway.reloaded", dict(status))
        if status["pending"]:
            log.warning("gateway.toml differs from the accepted policy; run `sp policy accept`")
        return status

    def flush_noise(self) -> None:
        counts = self.noise.drain()
        if counts:
            self.journals.actions.record("input.refused", {"counts": counts})

    def reap(self) -> None:
        self.approvals.reap()

    # -- checkpoints --------------------------------------------------------------------------

    def checkpoint(self, vault: UnlockedVault | None = None) -> None:
        """Sign the heads this process wrote (from memory, never re-read from the file), keep
        them inside the vault too, and send them off the machine."""
        if vault is None:
            try:
                vault, _ = self.vault.current()
            except Error:
                return
        with self._checkpoint_lock:
            self._check_changes_under_us()
            try:
                signer = vault.checkpoint_signer()
                for journal in (self.journals.sessions, self.journals.actions):
                    # Read from the file once at start (after the comparison), then kept in
                    # memory: an empty journal is signed empty, so a vanished one shows too.
                    self.checkpoints[journal.name] = signer.sign(journal.name, journal.head)
            except Error as exc:
                log.error("could not sign a checkpoint: %s", exc.diagnostic())
                return
            signed = [*self._contradicted, *self.checkpoints.values()]
            _write_checkpoints(self.paths.audit_dir / "checkpoint.json", signed)
            self._keep_in_vault(vault)
            self._send_to_syslog(list(self.checkpoints.values()))

    def _send_to_syslog(self, checkpoints: list[Checkpoint]) -> None:
        if not checkpoints:
            return
        target = SyslogTarget.parse(self.settings().syslog, local_path=self.parts.syslog_local_path)
        if self._syslog is not None and self._syslog.target != target:
            self._syslog.close()
            self._syslog = None
        if target.transport == "off":
            return
        if self._syslog is None:
            self._syslog = SyslogSender(target)
        message = format_heads(
            checkpoints, hostname=socket.gethostname(), pid=os.getpid(), now=datetime.now(UTC)
        )
        self._syslog.send(message)

    def _check_changes_under_us(self) -> None:
        """Before signing again: a journal someone else touched since the last signature
        (the writer then continued from whatever the file ended with) must still hold the
        head signed last, or the new signature would bless a cut."""
        for journal in (self.journals.sessions, self.journals.actions):
            changes = journal.external_changes
            if changes == self._external_seen.get(journal.name, 0):
                continue
            self._external_seen[journal.name] = changes
            previous = self.checkpoints.get(journal.name)
            if previous is None:
                continue
            finding = check_head(journal.path, journal.name, previous.head)
            if finding is not None:
                self._contradicted.append(previous)
                self._alarm_head(finding, "running gateway")

    def _keep_in_vault(self, vault: UnlockedVault) -> None:
        """The heads just signed, and the highest generation, saved inside the vault: at the
        next unlock they are compared again, even if checkpoint.json was removed meanwhile."""
        if vault.generation < self._highest_generation:
            # A file older than one seen before is not saved over on the gateway's own
            # initiative: its low generation is the evidence, kept for the next unlock.
            return
        heads = {name: checkpoint.head for name, checkpoint in self.checkpoints.items()}
        try:
            vault.record_evidence(VaultEvidence(heads, self._highest_generation))
        except Error as exc:  # the signed file stands; the vault's copy is one save behind
            log.warning("the journal heads could not be saved in the vault: %s", exc.diagnostic())
            return
        self._highest_generation = max(self._highest_generation, vault.generation)

    def checkpoint_view(self) -> dict[str, Any]:
        """The latest checkpoints in the file format `sp audit verify --checkpoint` reads."""
        signed = [*self._contradicted, *self.checkpoints.values()]
        document: dict[str, Any] = json.loads(dump_checkpoints(signed))
        return document

    # -- status -------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started_at),
            "vault": "unlocked" if self.vault.unlocked else "locked",
            "policy": self.policies.status(),
            "sessions": len(self.approvals.sessions()),
            "pending_cards": len(self.approvals.cards()),
            "journals": {
                journal.name: _head_json(journal.head)
                for journal in (self.journals.sessions, self.journals.actions)
            },
            "alarms": list(self.alarms),
        }

    def close(self) -> None:
        pools = (self.pool, self.control_pool, self.identity_pool, self.control_identity_pool)
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        if self._syslog is not None:
            self._syslog.close()  # the heads signed at stop still leave (bounded wait)
        self.journals.close()

    def _sealer(self) -> BodySealer | None:
        if self.parts.sealer_for is None:
            return None
        try:
            keys = self.parts.vault_store.public_keys()
        except Error:
            return None
        self._sealed_to = keys
        return self.parts.sealer_for(keys)


def _signing_order(checkpoint: Checkpoint) -> tuple[datetime, int]:
    return checkpoint.signed_at, checkpoint.head.seq


def _head_json(head: JournalHead) -> dict[str, object]:
    return {"seq": head.seq, "hash": head.hash}


def _write_checkpoints(path: Path, checkpoints: list[Checkpoint]) -> None:
    data = dump_checkpoints(checkpoints)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
