"""Signed journal heads: what the gateway signs, where the signatures go, and the vault
generations it has seen.

The heads are signed from memory (never re-read from a file an attacker could have cut), written
to checkpoint.json, kept inside the vault (so a removed checkpoint.json is noticed at the next
unlock) and sent off the machine to syslog. The highest vault generation seen is kept beside
them: an unlock of an older file is a rollback alarm.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from safeport.action_gateway.evidence.alarms import JournalEvidence
from safeport.action_gateway.evidence.journals import GatewayJournals
from safeport.action_gateway.evidence.stamper import CheckpointStamper
from safeport.action_gateway.evidence.syslog import SyslogSender, SyslogTarget, format_heads
from safeport.errors import Error
from safeport.shared.schemas.results import CheckpointResult, TimestampState
from safeport.vault import dump_checkpoints
from safeport.vault.interface import Checkpoint, UnlockedVault, VaultEvidence

log = logging.getLogger("safeport.gateway")


class CheckpointKeeper:
    def __init__(
        self,
        journals: GatewayJournals,
        evidence: JournalEvidence,
        *,
        file: Path,
        file_mode: int,
        syslog_setting: Callable[[], str],
        syslog_local_path: str,
        stamper: CheckpointStamper | None = None,
    ) -> None:
        self._journals = journals
        self._evidence = evidence
        self._file = file
        self._file_mode = file_mode
        self._syslog_setting = syslog_setting
        self._syslog_local_path = syslog_local_path
        self._syslog: SyslogSender | None = None
        self.stamper = stamper
        self._signed: dict[str, Checkpoint] = {}
        self._lock = threading.Lock()
        # The highest vault generation seen: journaled after each unlock and each of our own
        # saves (ref.generation), learned back from sessions.jsonl at start.
        self._highest_generation = -1

    @property
    def highest_generation(self) -> int:
        return self._highest_generation

    def learned_at_start(self, holding: dict[str, Checkpoint], highest_generation: int) -> None:
        """What the journals and the signed file said when the gateway started."""
        self._signed.update(holding)
        self._highest_generation = max(self._highest_generation, highest_generation)

    def judge_unlocked(self, vault: UnlockedVault) -> None:
        """An unlocked vault older than one seen before, or whose heads the journals no longer
        reach, raises an alarm; the human decides."""
        evidence = vault.evidence()
        seen = self._highest_generation
        if evidence is not None:
            seen = max(seen, evidence.highest_generation)
        if vault.generation < seen:
            # An older vault.sp was put back: rotated-out secrets and an older accepted policy
            # come back with it. Say so loudly.
            log.error("the vault file is older than the one unlocked before (rollback?)")
            self._evidence.alarm(
                "vault.rollback",
                {"alarm": True, "generation": vault.generation, "seen": seen},
                ref={"generation": seen},
            )
        self._highest_generation = max(seen, vault.generation)
        if evidence is not None:
            self._evidence.compare(evidence.heads, source="vault")

    def saved(self, vault: UnlockedVault) -> int:
        """The gateway saved the vault itself: its generation is now the highest seen."""
        self._highest_generation = max(self._highest_generation, vault.generation)
        return vault.generation

    def moved(self) -> bool:
        """Whether a journal's head differs from the one last signed (or none was signed)."""
        with self._lock:
            for journal in (self._journals.sessions, self._journals.actions):
                signed = self._signed.get(journal.name)
                if signed is None or signed.head != journal.head:
                    return True
            return False

    def sign(self, vault: UnlockedVault) -> None:
        """Sign the heads this process wrote, keep them in the file, the vault and syslog."""
        with self._lock:
            self._evidence.check_before_signing(self._signed)
            try:
                signer = vault.checkpoint_signer()
                for journal in (self._journals.sessions, self._journals.actions):
                    # Read from the file once at start (after the comparison), then kept in
                    # memory: an empty journal is signed empty, so a vanished one shows too.
                    self._signed[journal.name] = signer.sign(journal.name, journal.head)
            except Error as exc:
                log.error("could not sign a checkpoint: %s", exc.diagnostic())
                return
            _write_checkpoints(self._file, self._all_signed(), self._file_mode)
            self._keep_in_vault(vault)
            self._send_to_syslog(list(self._signed.values()))
            if self.stamper is not None:  # queued only: the authorities are asked elsewhere
                self.stamper.submit([cp.note for cp in self._signed.values() if cp.note])

    def view(self) -> CheckpointResult:
        """The latest checkpoints in the file format `sp audit verify --checkpoint` reads."""
        return CheckpointResult.model_validate_json(dump_checkpoints(self._all_signed()))

    def stamper_state(self) -> TimestampState | None:
        return self.stamper.state() if self.stamper is not None else None

    def close(self) -> None:
        if self.stamper is not None:
            self.stamper.close()
        if self._syslog is not None:
            self._syslog.close()  # the heads signed at stop still leave (bounded wait)

    def _all_signed(self) -> list[Checkpoint]:
        return [*self._evidence.contradicted, *self._signed.values()]

    def _keep_in_vault(self, vault: UnlockedVault) -> None:
        """The heads just signed, and the highest generation, saved inside the vault: at the
        next unlock they are compared again, even if checkpoint.json was removed meanwhile."""
        if vault.generation < self._highest_generation:
            # A file older than one seen before is not saved over on the gateway's own
            # initiative: its low generation is the evidence, kept for the next unlock.
            return
        heads = {name: checkpoint.head for name, checkpoint in self._signed.items()}
        try:
            vault.record_evidence(VaultEvidence(heads, self._highest_generation))
        except Error as exc:  # the signed file stands; the vault's copy is one save behind
            log.warning("the journal heads could not be saved in the vault: %s", exc.diagnostic())
            return
        self._highest_generation = max(self._highest_generation, vault.generation)

    def _send_to_syslog(self, checkpoints: list[Checkpoint]) -> None:
        if not checkpoints:
            return
        target = SyslogTarget.parse(self._syslog_setting(), local_path=self._syslog_local_path)
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
