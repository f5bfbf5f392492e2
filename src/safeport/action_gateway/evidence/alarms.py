"""The gateway's record of its own journals beyond their files, and the alarms raised from it.

:class:`JournalEvidence` holds what this run knows: signed heads a journal on disk contradicts
(kept in ``checkpoint.json`` for good, so `sp audit verify --checkpoint` keeps failing after new
heads are signed past a cut), the alarms raised (journaled in ``sessions.jsonl`` and shown by
``sp gateway status``), and how often each journal was changed under the running gateway. The
scans themselves are in :mod:`safeport.action_gateway.evidence.restart_scan`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from safeport.action_gateway.evidence.journals import DurableJournal, GatewayJournals
from safeport.action_gateway.evidence.restart_scan import HeadFinding, check_head, scan_refs
from safeport.errors import Error
from safeport.shared.audit import JournalBody, JournalHead
from safeport.shared.known_secrets import shorten
from safeport.vault import CheckpointInvalid, load_checkpoints, verify_checkpoint
from safeport.vault.interface import Checkpoint, VaultPublicKeys

log = logging.getLogger("safeport.gateway")


class JournalEvidence:
    def __init__(self, journals: GatewayJournals, checkpoint_file: Path) -> None:
        self._journals = journals
        self._by_name: dict[str, DurableJournal] = {j.name: j for j in self._all()}
        self.checkpoint_file = checkpoint_file
        self.contradicted: list[Checkpoint] = []
        self.alarms: list[dict[str, object]] = []
        self._reported: set[tuple[str, int, str]] = set()
        self._external_seen: dict[str, int] = {}

    # -- at start -----------------------------------------------------------------------------

    def inspect_at_start(
        self, public_keys: Callable[[], VaultPublicKeys]
    ) -> tuple[dict[str, Checkpoint], int]:
        """Compare the journals with the heads signed before, close intents that never got an
        outcome; returns the signed heads that still hold and the highest generation journaled.
        Runs before anything is written this run."""
        latest: dict[str, Checkpoint] = {}
        # File order breaks ties of signed_at (whole seconds): the gateway writes contradicted
        # heads first and the current ones after them.
        for checkpoint in sorted(self._recorded(public_keys), key=lambda cp: cp.signed_at):
            earlier = latest.get(checkpoint.journal)
            if earlier is not None:
                # Only an earlier alarm leaves two heads of one journal: carry its evidence on.
                self.contradicted.append(earlier)
            latest[checkpoint.journal] = checkpoint
        holding: dict[str, Checkpoint] = {}
        for journal in self._all():
            signed = latest.get(journal.name)
            if signed is None:
                continue
            if self.compare({journal.name: signed.head}, source="checkpoint.json"):
                holding[journal.name] = signed
            else:
                self.contradicted.append(signed)
        for journal in self._all():
            # The next checkpoint signs what each journal holds now, even one this run never
            # writes: a cut journal gets a later head beside the contradicted one (the next
            # start knows that cut is on record), and verify sees the two disagree.
            journal.read_head()
        self._close_interrupted_intents()
        return holding, scan_refs(self._journals.sessions.path).highest_generation

    def _recorded(self, public_keys: Callable[[], VaultPublicKeys]) -> list[Checkpoint]:
        """The genuine signed heads in checkpoint.json (none if it is absent)."""
        path = self.checkpoint_file
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.alarm("checkpoint.invalid", {"alarm": True, "detail": exc.strerror or "unread"})
            return []
        try:
            keys = public_keys()
        except Error:
            return []  # no vault (yet): nothing to check the signatures with
        try:
            checkpoints = load_checkpoints(data, source=path.name)
            for checkpoint in checkpoints:
                verify_checkpoint(checkpoint, keys)
        except CheckpointInvalid as exc:
            # Forged, from another vault, or damaged: none of its heads can be relied on.
            self.alarm("checkpoint.invalid", {"alarm": True, "detail": shorten(exc.message, 300)})
            return []
        return checkpoints

    def _close_interrupted_intents(self) -> None:
        actions = self._journals.actions
        for intent in scan_refs(actions.path).open_intents:
            log.warning("intent %d has no outcome: the gateway stopped in between", intent.seq)
            actions.record(
                "action.interrupted",
                {
                    "intent_seq": intent.seq,
                    "intent_hash": intent.hash,
                    "outcome": "unknown",
                    "reason": "the gateway stopped between the intent and its outcome",
                },
                ref={"intent": intent.seq},
            )

    # -- any time -----------------------------------------------------------------------------

    def compare(self, heads: Mapping[str, JournalHead], *, source: str) -> bool:
        """Alarm for every journal that no longer holds its recorded head; True if all do."""
        clean = True
        for name, head in sorted(heads.items()):
            journal = self._by_name.get(name)
            if journal is None:
                continue
            finding = check_head(journal.path, name, head)
            if finding is not None:
                clean = False
                self._alarm_head(finding, source)
        return clean

    def check_before_signing(self, signed: Mapping[str, Checkpoint]) -> None:
        """A journal someone else touched since its last signature (the writer then went on
        from whatever the file ended with) must still hold that head, or the next signature
        would bless a cut."""
        for journal in self._all():
            changes = journal.external_changes
            if changes == self._external_seen.get(journal.name, 0):
                continue
            self._external_seen[journal.name] = changes
            previous = signed.get(journal.name)
            if previous is None:
                continue
            finding = check_head(journal.path, journal.name, previous.head)
            if finding is not None:
                self.contradicted.append(previous)
                self._alarm_head(finding, "running gateway")

    def alarm(self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None) -> None:
        self._journals.sessions.record(kind, body, ref=ref)
        self.alarms.append({"kind": kind, "at": time.time(), **body})

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
        self.alarm(finding.alarm, finding.as_record(source))

    def _all(self) -> tuple[DurableJournal, DurableJournal]:
        return self._journals.sessions, self._journals.actions
