"""Group commit: an append returns after an fsync that began after its write, and one fsync
serves every append waiting when it begins.

Writes are numbered under the writer's lock. A thread that needs its write on disk takes the
sync lock: if an fsync that started after its write has finished meanwhile, it returns at once;
otherwise it fsyncs everything written so far. The writer's lock is not held during the fsync,
so other threads go on appending (and share the next fsync) while the disk works.

fsync covers the file, not the descriptor: another process's later record in the same file is
never on disk without the earlier ones. Only a rotation could separate them, and it fsyncs the
old file first (``sync_all(force=True)``).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable


class GroupCommit:
    """Which writes of one journal file are known to be on disk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held for the length of one fsync
        self._written = 0
        self._synced = 0
        self._failure: str | None = None

    def wrote(self) -> int:
        """Count one write that has returned (under the writer's lock); it is the write's ticket."""
        self._written += 1
        return self._written

    def sync(
        self, ticket: int, fd: Callable[[], int], while_waiting: Callable[[], None] | None = None
    ) -> None:
        """Return once write ``ticket`` is on disk; ``fd`` is read under the sync lock, where the
        writer cannot close it (it calls :meth:`sync_all` first). ``while_waiting`` runs just
        before this thread's fsync, for work that another thread can do while it waits."""
        with self._lock:
            if self._synced >= ticket:
                return
            if while_waiting is not None:
                while_waiting()
            self._sync_locked(fd())

    def sync_all(self, fd: int, *, force: bool = False) -> None:
        """fsync what was written so far; the writer calls it under its own lock before the
        descriptor closes or the file is renamed (``force``: even if this process wrote nothing
        unsynced, another process may have)."""
        with self._lock:
            if fd >= 0 and (force or self._synced < self._written):
                self._sync_locked(fd)

    def _sync_locked(self, fd: int) -> None:
        if self._failure is not None:
            # Linux reports a writeback error once and may drop the pages it covered: a later
            # fsync's success would prove nothing about them, so none is trusted again.
            raise OSError(errno.EIO, self._failure)
        if fd < 0:
            raise OSError(errno.EBADF, "the journal is closed")
        target = self._written  # every write counted here returned before the fsync begins
        try:
            os.fsync(fd)
        except OSError as exc:
            self._failure = f"an earlier fsync failed ({exc.strerror or exc})"
            raise
        self._synced = target
