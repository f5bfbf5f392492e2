"""Checkpoint notes time-stamped in the background, so no action ever waits on an authority.

`CheckpointKeeper.sign` hands the notes it just signed to :meth:`CheckpointStamper.submit`,
which only queues them and wakes one thread. That thread asks every configured authority in
turn (see :mod:`tsa_client`), appends each verified stamp to ``checkpoint.stamps`` beside
checkpoint.json, and on a fault keeps the notes and retries that authority with back-off
(doubling from 2 s to 5 min). The first fault of a streak, and each change of its reason, is
journaled (``timestamp.failed``); the return to health is journaled too. `sp status` and
`sp doctor` read :meth:`state`.

A journal's note is asked for only when its head moved since that authority's last stamp of
it (read back from the stamps file after a restart, :mod:`stamp_history`): a quiet gateway
signs a checkpoint every few minutes, and stamping each would grow the stamps file without
bound while proving nothing new. Each authority keeps one waiting note per journal, the
newest: it covers every record before it (the chain links them), and it waits since the first
head that moved. "Stale" is a head that has waited longer than the policy's bound.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from safeport.action_gateway.evidence.stamp_history import LastStamps, read_last_stamps
from safeport.action_gateway.evidence.tsa_client import (
    TsaFault,
    TsaTarget,
    new_client,
    request_stamp,
)
from safeport.shared.schemas.config import TimestampSettings, TsaSettings
from safeport.shared.schemas.results import TimestampState
from safeport.vault.signed_note import note_head
from safeport.vault.timestamp_check import STAMPS_FILE, StoredStamp

log = logging.getLogger("safeport.gateway")

FIRST_RETRY_S = 2.0
LAST_RETRY_S = 300.0

Journal = Callable[[str, dict[str, object]], object]
Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Waiting:
    note: str
    since: datetime  # when the oldest head not stamped yet was handed over


@dataclass
class _Authority:
    pending: dict[str, _Waiting] = field(default_factory=dict)  # journal -> its newest note
    stamped: dict[str, str] = field(default_factory=dict)  # journal -> the note last stamped
    fault: str | None = None
    retry_in: float = 0.0  # 0: the next fault waits FIRST_RETRY_S
    next_try: float = 0.0


class CheckpointStamper:
    def __init__(
        self,
        folder: Path,
        file_mode: int,
        settings: Callable[[], TimestampSettings | None],
        journal: Journal,
        clock: Clock = _now,
    ) -> None:
        self._file = folder / STAMPS_FILE
        self._file_mode = file_mode
        self._settings = settings
        self._journal = journal
        self._clock = clock
        self._authorities: dict[str, _Authority] = {}
        self._history: LastStamps | None = None  # read once, at the first need
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._died: str | None = None
        self._last_stamped: datetime | None = None

    def submit(self, notes: list[str]) -> None:
        """Queue each of ``notes`` whose journal moved since an authority's last stamp of it;
        never blocks on the network."""
        settings = self._settings()
        if settings is None or not notes:
            return
        now = self._clock()
        queued = False
        with self._lock:
            if self._stopping:
                return
            for tsa in settings.tsa:
                authority = self._authority(tsa.url)
                for note in notes:
                    queued |= _queue(authority, note, now)
            if queued and self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="checkpoint-stamper", daemon=True
                )
                self._thread.start()
        if queued:
            self._wake.set()

    def state(self) -> TimestampState | None:
        """What `sp status` shows; None when no authority is configured."""
        settings = self._settings()
        if settings is None:
            return None
        bound = settings.stale_after_minutes * 60
        now = self._clock()
        with self._lock:
            self._read_history()  # the stamps made before a restart count as the last ones
            last = self._last_stamped
            faults, waited = [], 0.0
            for tsa in settings.tsa:
                authority = self._authorities.get(tsa.url)
                if authority is None:
                    continue
                if authority.fault is not None:
                    faults.append(f"{tsa.url}: {authority.fault}")
                for waiting in authority.pending.values():
                    waited = max(waited, (now - waiting.since).total_seconds())
            if self._died is not None:
                faults.append(f"stamping stopped: {self._died}")
        return TimestampState(
            last_stamped_at=last.isoformat() if last is not None else None,
            stale_after_s=bound,
            stale=waited > bound,
            faults=faults,
        )

    def close(self, wait_s: float = 2.0) -> None:
        """Stop the thread after one last round; what is not done after ``wait_s`` is
        abandoned (the thread is a daemon: it never holds the process)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout=wait_s)

    def _read_history(self) -> LastStamps:
        """The stamps made before a restart, read once (lock held)."""
        if self._history is None:
            self._history = read_last_stamps(self._file)
            self._last_stamped = self._history.at
        return self._history

    def _authority(self, url: str) -> _Authority:
        """``url``'s state, starting from what it stamped before a restart (lock held)."""
        found = self._authorities.get(url)
        if found is None:
            notes = self._read_history().notes
            stamped = {j: note for (tsa, j), note in notes.items() if tsa == url}
            found = self._authorities[url] = _Authority(stamped=stamped)
        return found

    def _run(self) -> None:
        try:
            with new_client() as client:
                while True:
                    self._wake.clear()  # before the round: a submit during it is not missed
                    # A round after close() too: the heads signed at stop are asked for once,
                    # within the wait close() allows.
                    wait = self._round(client)
                    with self._lock:
                        if self._stopping:
                            return
                    self._wake.wait(timeout=wait)
        except Exception as exc:
            # Each request's faults are caught in _ask; what still ends the thread (no HTTP
            # client, say) shows in sp status and sp doctor, never a silent stop.
            with self._lock:
                self._died = type(exc).__name__
            log.exception("checkpoint stamping stopped")

    def _round(self, client: httpx.Client) -> float:
        """Ask each authority due for its waiting notes; the seconds until the next is due."""
        settings = self._settings()
        if settings is None:
            return LAST_RETRY_S
        soonest = LAST_RETRY_S
        for tsa in settings.tsa:
            soonest = min(soonest, self._ask(client, tsa, settings.timeout_s))
        return soonest

    def _ask(self, client: httpx.Client, tsa: TsaSettings, timeout_s: float) -> float:
        """Ask one authority for each waiting note, until one fails; the seconds until it is
        due again."""
        while True:
            with self._lock:
                authority = self._authority(tsa.url)
                due = authority.next_try - time.monotonic()
                if not authority.pending:
                    return LAST_RETRY_S
                if due > 0:
                    return due
                journal, waiting = next(iter(authority.pending.items()))
            try:
                target = TsaTarget.from_settings(tsa)
                self._store(request_stamp(client, target, waiting.note, timeout_s))
            except TsaFault as exc:
                return self._failed(tsa.url, authority, str(exc))
            except OSError as exc:
                reason = f"the stamp could not be stored ({exc.strerror})"
                return self._failed(tsa.url, authority, reason)
            except Exception as exc:
                # Whatever else one answer provokes (a parser's own error type, say) is that
                # request's fault: the thread goes on with the others and retries this one.
                log.debug("time-stamp request failed", exc_info=True)
                reason = f"the stamp could not be made ({type(exc).__name__})"
                return self._failed(tsa.url, authority, reason)
            self._stamped(tsa.url, authority, journal, waiting.note)

    def _failed(self, url: str, authority: _Authority, reason: str) -> float:
        with self._lock:
            changed = authority.fault != reason
            authority.fault = reason
            wait = authority.retry_in or FIRST_RETRY_S
            authority.next_try = time.monotonic() + wait
            authority.retry_in = min(wait * 2, LAST_RETRY_S)
        if changed:
            log.warning("time-stamping authority %s: %s; retrying with back-off", url, reason)
            self._journal("timestamp.failed", {"tsa": url, "reason": reason, "retry_s": wait})
        return wait

    def _stamped(self, url: str, authority: _Authority, journal: str, note: str) -> None:
        with self._lock:
            authority.stamped[journal] = note
            waiting = authority.pending.get(journal)
            if waiting is not None and waiting.note == note:
                del authority.pending[journal]
            recovered = authority.fault is not None
            authority.fault, authority.retry_in, authority.next_try = None, 0.0, 0.0
            self._last_stamped = self._clock()
        if recovered:
            self._journal("timestamp.recovered", {"tsa": url})

    def _store(self, stamp: StoredStamp) -> None:
        """Append the stamp (one line) beside checkpoint.json.

        Not fsynced: an fsync here competes with the journals' own on the same disk, which
        every action waits for. A crash loses at most the stamps of the last seconds; the next
        checkpoint's stamp covers every record before it again (the chain links them)."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self._file, flags, 0o600)
        try:
            os.fchmod(fd, self._file_mode)
            os.write(fd, stamp.line())
        finally:
            os.close(fd)


def _queue(authority: _Authority, note: str, now: datetime) -> bool:
    """Keep ``note`` for ``authority`` unless it stamped it already (pure); whether it waits.

    A newer note of a journal replaces the waiting one, which it covers, but not the time
    that one has waited since."""
    head = note_head(note)
    journal = head[0] if head is not None else note
    if authority.stamped.get(journal) == note:
        return False
    waiting = authority.pending.get(journal)
    authority.pending[journal] = _Waiting(note, waiting.since if waiting else now)
    return True
