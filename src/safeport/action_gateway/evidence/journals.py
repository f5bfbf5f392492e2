"""The gateway's two journals, ``sessions.jsonl`` and ``actions.jsonl``.

Every record is on disk (fsynced) before the step it records proceeds. Concurrent proposals share
fsyncs (group commit): each thread writes its record under the writer's lock and then waits,
outside it, for an fsync that began after its write; one fsync serves every record waiting when
it begins (:mod:`safeport.shared.audit.group_commit`). Junk from one connection and refused
connections are counted in memory and journaled as one record per connection or per second,
never one fsync per bad frame; refusals past a requester's budget likewise
(:class:`RefusalRecords`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from safeport.action_gateway.evidence.journal_space import JournalSpace
from safeport.action_gateway.evidence.refusal_budget import RefusalBudget, record_size
from safeport.shared.audit import (
    DEFAULT_SEGMENT_BYTES,
    BodySealer,
    JournalBody,
    JournalHead,
    JournalWriter,
)
from safeport.shared.schemas.results import JournalSpace as JournalSpaceView

SESSIONS = "sessions"
ACTIONS = "actions"


class DurableJournal:
    """One journal; :meth:`record` returns once the record is durable."""

    def __init__(
        self,
        path: Path,
        sealer: BodySealer | None = None,
        *,
        file_mode: int = 0o600,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.name = path.stem
        self.path = path
        self._writer = JournalWriter(
            path,
            durability="fsync",
            sealer=sealer,
            file_mode=file_mode,
            segment_bytes=segment_bytes,
        )

    def record(
        self, kind: str, body: JournalBody, *, ref: dict[str, int] | None = None
    ) -> JournalHead:
        return self._writer.append(kind, body, ref=ref)

    @property
    def head(self) -> JournalHead:
        return self._writer.head

    def set_sealer(self, sealer: BodySealer | None) -> None:
        self._writer.sealer = sealer

    def read_head(self) -> JournalHead:
        return self._writer.read_head()

    @property
    def external_changes(self) -> int:
        return self._writer.external_changes

    def close(self) -> None:
        self._writer.close()


class GatewayJournals:
    def __init__(
        self,
        audit_dir: Path,
        sealer: BodySealer | None = None,
        *,
        file_mode: int = 0o600,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.sessions = DurableJournal(
            audit_dir / f"{SESSIONS}.jsonl",
            sealer,
            file_mode=file_mode,
            segment_bytes=segment_bytes,
        )
        self.actions = DurableJournal(
            audit_dir / f"{ACTIONS}.jsonl", sealer, file_mode=file_mode, segment_bytes=segment_bytes
        )

    def set_sealer(self, sealer: BodySealer | None) -> None:
        self.sessions.set_sealer(sealer)
        self.actions.set_sealer(sealer)

    def close(self) -> None:
        self.sessions.close()
        self.actions.close()


class NoiseCounter:
    """Counts junk frames and refused connections until they are journaled as one record."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, category: str, count: int = 1) -> None:
        with self._lock:
            self._counts[category] += count

    def drain(self) -> dict[str, int]:
        with self._lock:
            counts = dict(self._counts)
            self._counts.clear()
        return counts


class RefusalRecords:
    """What refusals make the gateway write: connection noise counted per period, the
    requesters' budget of whole refusal records (:mod:`refusal_budget`), the free space
    proposals need (:mod:`journal_space`)."""

    def __init__(
        self,
        journals: GatewayJournals,
        budget: Callable[[], RefusalBudget],
        space: JournalSpace,
    ) -> None:
        self._actions = journals.actions
        self._sessions = journals.sessions
        self.noise = NoiseCounter()
        self.budget = budget()
        # What any admitted uid can make sessions.jsonl hold without the passphrase (failed
        # proofs, reloads); its categories are the record kinds, aggregated as ``KIND_many``.
        self.sessions_budget = budget()
        self.space = space

    def refused(self, uid: int, category: str, kind: str, body: JournalBody) -> None:
        """A requester's junk or refusal: whole within its uid's budget, else only counted."""
        if self.budget.admit(uid, category, record_size(body)):
            self._actions.record(kind, body)

    def session_by(self, uid: int | None, kind: str, body: JournalBody) -> None:
        """A sessions record ``uid`` caused: whole within its budget, else counted into one
        ``KIND_many`` record per window. None: the account or root asked (SIGHUP); whole."""
        if uid is None or self.sessions_budget.admit(uid, kind, record_size(body)):
            self._sessions.record(kind, body)

    def flush(self, *, everything: bool = False) -> None:
        """Journal the noise counts and the refusal tallies whose window ended (``everything``
        at stop); a tally that could not be written is kept for the next flush."""
        counts = self.noise.drain()
        if counts:
            self._actions.record("input.refused", {"counts": counts})
        _flush_tallies(self.budget, self._actions, lambda _: "action.denied_many", everything)
        _flush_tallies(self.sessions_budget, self._sessions, lambda c: f"{c}_many", everything)

    def view(self) -> JournalSpaceView:
        return self.space.view(self.budget.counted + self.sessions_budget.counted)


def _flush_tallies(
    budget: RefusalBudget, journal: DurableJournal, kind: Callable[[str], str], everything: bool
) -> None:
    """Journal the tallies whose window ended; one that could not be written is kept."""
    tallies = budget.due(everything=everything)
    written = 0
    try:
        for tally in tallies:
            journal.record(kind(tally.category), tally.body())
            written += 1
    finally:
        # Whatever stopped the loop (the journal's own error, raised on to the caller), the
        # tallies not yet on disk go back to be written at the next try.
        if written < len(tallies):
            budget.put_back(tallies[written:])
