"""Checkpoint notes time-stamped in the background, so no action ever waits on an authority.

`CheckpointKeeper.sign` hands the notes it just signed to :meth:`CheckpointStamper.submit`,
which only queues them and wakes one thread. That thread asks every configured authority in
turn (see :mod:`tsa_client`), appends each verified stamp to ``checkpoint.stamps`` beside
checkpoint.json, and on a fault keeps the notes and retries that authority with back-off
(doubling from 2 s to 5 min). The first fault of a streak, and each change of its reason, is
journaled (``timestamp.failed``); the return to health is journaled too. `sp status` and
`sp doctor` read :meth:`state`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from safeport.action_gateway.evidence.tsa_client import (
    TsaFault,
    TsaTarget,
    new_client,
    request_stamp,
)
from safeport.shared.schemas.config import TimestampSettings
from safeport.shared.schemas.results import TimestampState
from safeport.vault.timestamp_check import STAMPS_FILE, StoredStamp

log = logging.getLogger("safeport.gateway")

FIRST_RETRY_S = 2.0
LAST_RETRY_S = 300.0
PENDING_PER_TSA = 32  # the oldest notes give way: a later note covers the records before it

Journal = Callable[[str, dict[str, object]], object]


@dataclass
class _Authority:
    pending: deque[str] = field(default_factory=lambda: deque(maxlen=PENDING_PER_TSA))
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
    ) -> None:
        self._file = folder / STAMPS_FILE
        self._file_mode = file_mode
        self._settings = settings
        self._journal = journal
        self._authorities: dict[str, _Authority] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._started = datetime.now(UTC)
        self._last_stamped: datetime | None = None

    def submit(self, notes: list[str]) -> None:
        """Queue ``notes`` for every configured authority; never blocks on the network."""
        settings = self._settings()
        if settings is None or not notes:
            return
        with self._lock:
            if self._stopping:
                return
            for tsa in settings.tsa:
                self._authorities.setdefault(tsa.url, _Authority()).pending.extend(notes)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="checkpoint-stamper", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def state(self) -> TimestampState | None:
        """What `sp status` shows; None when no authority is configured."""
        settings = self._settings()
        if settings is None:
            return None
        bound = settings.stale_after_minutes * 60
        with self._lock:
            last = self._last_stamped
            faults = [
                f"{tsa.url}: {authority.fault}"
                for tsa in settings.tsa
                if (authority := self._authorities.get(tsa.url)) and authority.fault is not None
            ]
        since = last if last is not None else self._started
        stale = (datetime.now(UTC) - since).total_seconds() > bound
        return TimestampState(
            last_stamped_at=last.isoformat() if last is not None else None,
            stale_after_s=bound,
            stale=stale,
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

    def _run(self) -> None:
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

    def _round(self, client: httpx.Client) -> float:
        """Ask each authority due for its pending notes; the seconds until the next is due."""
        settings = self._settings()
        if settings is None:
            return LAST_RETRY_S
        soonest = LAST_RETRY_S
        for tsa in settings.tsa:
            with self._lock:
                authority = self._authorities.setdefault(tsa.url, _Authority())
                due = authority.next_try - time.monotonic()
                if not authority.pending:
                    continue
                if due > 0:
                    soonest = min(soonest, due)
                    continue
                note = authority.pending[0]
            try:
                target = TsaTarget.from_settings(tsa)
                stamp = request_stamp(client, target, note, settings.timeout_s)
                self._store(stamp)
            except TsaFault as exc:
                soonest = min(soonest, self._failed(tsa.url, authority, str(exc)))
                continue
            except OSError as exc:
                reason = f"the stamp could not be stored ({exc.strerror})"
                soonest = min(soonest, self._failed(tsa.url, authority, reason))
                continue
            self._stamped(tsa.url, authority, note)
            soonest = 0.0 if authority.pending else soonest
        return soonest

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

    def _stamped(self, url: str, authority: _Authority, note: str) -> None:
        with self._lock:
            if authority.pending and authority.pending[0] == note:
                authority.pending.popleft()
            recovered = authority.fault is not None
            authority.fault, authority.retry_in, authority.next_try = None, 0.0, 0.0
            self._last_stamped = datetime.now(UTC)
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
