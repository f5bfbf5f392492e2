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
from collections.abc import Callable
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
from safeport.action_gateway.executors.interface import Executor
from safeport.action_gateway.identity import IdentityProbe, PeerIdentity
from safeport.action_gateway.journal_evidence import JournalEvidence
from safeport.action_gateway.journals import GatewayJournals, NoiseCounter
from safeport.action_gateway.ladder import Ladder
from safeport.action_gateway.notifications import notify_card_waiting
from safeport.action_gateway.policy_store import PolicyStore
from safeport.action_gateway.rate_limits import RateLimiter
from safeport.action_gateway.server import ServerLimits
from safeport.action_gateway.vault_state import VaultState
from safeport.errors import Error
from safeport.shared.audit import BodySealer, JournalHead
from safeport.shared.audit.writer import DEFAULT_SEGMENT_BYTES
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewaySettings
from safeport.vault.backend import FileVaultBackend
from safeport.vault.checkpoints import dump_checkpoints
from safeport.vault.interface import (
    Checkpoint,
    UnlockedVault,
    VaultEvidence,
    VaultPublicKeys,
    VaultStore,
)
from safeport.vault.secrets import SecretBytes
from safeport.vault.store import VaultFile

log = logging.getLogger("safeport.gateway")


@dataclass(frozen=True)
class GatewayParts:
    """What the gateway is built from; tests and benchmarks pass their own executor."""

    vault_store: VaultStore
    executor: Executor
    probe: IdentityProbe
    sealer_for: Callable[[VaultPublicKeys], BodySealer] | None = None
    # Identifies control.sock's peers when it must not share ``probe`` with agents (the
    # dedicated mode's inspector processes answer one question at a time); None: ``probe``.
    control_probe: IdentityProbe | None = None
    syslog_local_path: str = LOCAL_SOCKET


@dataclass(frozen=True)
class RuntimeLimits:
    server: ServerLimits = field(default_factory=ServerLimits)
    reap_interval_s: float = 1.0
    noise_interval_s: float = 1.0
    checkpoint_interval_s: float = 300.0
    worker_threads: int = 64
    # Rotation size of each journal's active file; drills use a small one to crash mid-rotation.
    journal_segment_bytes: int = DEFAULT_SEGMENT_BYTES


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
        # Who may use either socket: this user, or the install's named humans.
        self.admitted_uids = admitted_uids(paths)
        self._sealed_to: VaultPublicKeys | None = None
        # The highest vault generation seen: journaled after each unlock and each of our own
        # saves (ref.generation), learned back from sessions.jsonl at start.
        self._highest_generation = -1
        self._syslog: SyslogSender | None = None
        # A dedicated account's humans read (verify) the journals through its group.
        self.journal_mode = 0o640 if paths.install is not None else 0o600
        self.journals = GatewayJournals(
            paths.audit_dir,
            self._sealer(),
            file_mode=self.journal_mode,
            segment_bytes=limits.journal_segment_bytes,
        )
        self.evidence = JournalEvidence(self.journals, paths.audit_dir / "checkpoint.json")
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
            admitted_uids=self.admitted_uids,
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
            self.evidence.alarm(
                "vault.rollback",
                {"alarm": True, "generation": generation, "seen": seen},
                ref={"generation": seen},
            )
        self._highest_generation = max(seen, generation)
        if evidence is not None:
            self.evidence.compare(evidence.heads, source="vault")
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
        """Before anything is served or written: judge the journals against the heads signed
        before, learn the highest generation journaled, close interrupted intents."""
        holding, highest = self.evidence.inspect_at_start(self.parts.vault_store.public_keys)
        self.checkpoints.update(holding)
        self._highest_generation = max(self._highest_generation, highest)

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

    def create_vault(self, passphrase: SecretBytes) -> VaultPublicKeys:
        """`sp vault init` through the gateway (its account alone may write the vault file)."""
        keys = self.vault.create(passphrase)
        if self.parts.sealer_for is not None:
            self.journals.set_sealer(self.parts.sealer_for(keys))
            self._sealed_to = keys
        self.record_session("vault.created", {"checkpoint_signer": keys.checkpoint_fingerprint})
        return keys

    def describe_vault(self) -> dict[str, object]:
        """What `sp vault status` shows, read by the gateway from the file only it can read."""
        store = self.parts.vault_store
        if not isinstance(store, VaultFile):
            return {"exists": True, "path": str(store.path)}
        return FileVaultBackend(store).status().as_json()

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
            self.evidence.check_before_signing(self.checkpoints)
            try:
                signer = vault.checkpoint_signer()
                for journal in (self.journals.sessions, self.journals.actions):
                    # Read from the file once at start (after the comparison), then kept in
                    # memory: an empty journal is signed empty, so a vanished one shows too.
                    self.checkpoints[journal.name] = signer.sign(journal.name, journal.head)
            except Error as exc:
                log.error("could not sign a checkpoint: %s", exc.diagnostic())
                return
            signed = [*self.evidence.contradicted, *self.checkpoints.values()]
            _write_checkpoints(self.paths.audit_dir / "checkpoint.json", signed, self.journal_mode)
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
        signed = [*self.evidence.contradicted, *self.checkpoints.values()]
        document: dict[str, Any] = json.loads(dump_checkpoints(signed))
        return document

    # -- status -------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "account": self.paths.install.account if self.paths.install else None,
            "uptime_s": round(time.time() - self.started_at),
            "vault": "unlocked" if self.vault.unlocked else "locked",
            "policy": self.policies.status(),
            "sessions": len(self.approvals.sessions()),
            "pending_cards": len(self.approvals.cards()),
            "journals": {
                journal.name: _head_json(journal.head)
                for journal in (self.journals.sessions, self.journals.actions)
            },
            "alarms": list(self.evidence.alarms),
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


def admitted_uids(paths: SafeportPaths) -> frozenset[int]:
    """The uids served on agent.sock and control.sock."""
    if paths.install is not None:
        return frozenset(paths.install.humans)
    return frozenset({os.geteuid()})


def _head_json(head: JournalHead) -> dict[str, object]:
    return {"seq": head.seq, "hash": head.hash}


def _write_checkpoints(path: Path, checkpoints: list[Checkpoint], mode: int) -> None:
    data = dump_checkpoints(checkpoints)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(path)
