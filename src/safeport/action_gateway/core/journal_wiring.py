"""The run's journals and what keeps them honest, opened together at start: the sealing of
their bodies to the vault's audit key, the evidence that judges them (alarms), the checkpoint
keeper that signs their heads, and the refusal records that bound what one requester can make
them hold (the journals' disk reserve included)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from safeport.action_gateway.core.parts import GatewayParts, RuntimeLimits
from safeport.action_gateway.evidence.alarms import JournalEvidence
from safeport.action_gateway.evidence.checkpoints import CheckpointKeeper
from safeport.action_gateway.evidence.journal_space import JournalSpace
from safeport.action_gateway.evidence.journals import GatewayJournals, RefusalRecords
from safeport.action_gateway.evidence.refusal_budget import RefusalBudget
from safeport.action_gateway.evidence.sealing import JournalSealing
from safeport.action_gateway.evidence.stamper import CheckpointStamper
from safeport.action_gateway.policy.store import ServedPolicy
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas.config import GatewaySettings, TimestampSettings
from safeport.shared.schemas.results import JournalHeadView
from safeport.vault.interface import VaultPublicKeys


@dataclass(frozen=True)
class GatewayRecords:
    sealing: JournalSealing
    journals: GatewayJournals
    evidence: JournalEvidence
    checkpoints: CheckpointKeeper
    refusals: RefusalRecords

    def inspect_at_start(self, public_keys: Callable[[], VaultPublicKeys]) -> None:
        """Before anything is served: judge the journals, learn the highest generation."""
        holding, highest = self.evidence.inspect_at_start(public_keys)
        self.checkpoints.learned_at_start(holding, highest)


def open_records(
    paths: SafeportPaths,
    parts: GatewayParts,
    limits: RuntimeLimits,
    served: Callable[[], ServedPolicy | None],
) -> GatewayRecords:
    """The journals in the audit folder, sealed to the keys in vault.pub.json when there are
    some; the served policy's syslog and time-stamping settings are read at each checkpoint
    (they can change)."""

    def syslog_setting() -> str:
        policy = served()
        return policy.policy.gateway.syslog if policy else GatewaySettings().syslog

    def timestamp_setting() -> TimestampSettings | None:
        policy = served()
        return policy.policy.audit.timestamp if policy else None

    sealing = JournalSealing(parts.sealer_for)
    # A dedicated account's humans read (verify) the journals through its group.
    journal_mode = 0o640 if paths.install is not None else 0o600
    journals = GatewayJournals(
        paths.audit_dir,
        sealing.at_start(parts.vault_store),
        file_mode=journal_mode,
        segment_bytes=limits.journal_segment_bytes,
    )
    evidence = JournalEvidence(journals, paths.audit_dir / "checkpoint.json")
    checkpoints = CheckpointKeeper(
        journals,
        evidence,
        file=paths.audit_dir / "checkpoint.json",
        file_mode=journal_mode,
        syslog_setting=syslog_setting,
        syslog_local_path=parts.syslog_local_path,
        stamper=CheckpointStamper(
            paths.audit_dir,
            journal_mode,
            timestamp_setting,
            journals.sessions.record,
        ),
    )
    refusals = RefusalRecords(
        journals,
        lambda: RefusalBudget(
            full_per_window=limits.refusals_per_window, window_s=limits.refusal_window_s
        ),
        JournalSpace(paths.audit_dir, limits.journal_reserve_bytes),
    )
    return GatewayRecords(sealing, journals, evidence, checkpoints, refusals)


def journal_heads(journals: GatewayJournals) -> dict[str, JournalHeadView]:
    """Each journal's head (sequence and hash), as `sp status` shows it."""
    return {
        journal.name: JournalHeadView(seq=journal.head.seq, hash=journal.head.hash)
        for journal in (journals.sessions, journals.actions)
    }
