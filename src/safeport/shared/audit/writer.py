"""Append records to a journal so that several processes, crashes and rotation keep one chain.

Every append runs under an exclusive ``flock`` on a lock file beside the journal, so writers in
different processes serialise and always extend the real last record. The writer remembers the
head and the file size it left; when another process has appended since, it re-reads only the
last line. A torn last line (a crash mid-write) is trimmed under the lock and replaced by a
``recovery`` record (:mod:`safeport.shared.audit.tail`).

In ``fsync`` mode an append returns once its record is on disk; the fsync runs after the locks
are released, so appends from other threads share it (:mod:`safeport.shared.audit.group_commit`).
In ``batched`` mode records are written at once and fsynced within ``batch_window_s``
(:data:`BATCH_WINDOW_S` unless given).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal, TypeVar

from safeport.errors import AuditError, JournalUnavailable
from safeport.shared.audit import journal_file, tail
from safeport.shared.audit.group_commit import GroupCommit
from safeport.shared.audit.members import (
    BodySealer,
    KindNames,
    Timestamps,
    record_members,
    waiting_hook,
)
from safeport.shared.audit.record import GENESIS, JournalHead, format_record_json
from safeport.shared.audit.tail import MAX_RECORD_BYTES
from safeport.shared.folder_sync import fsync_dir

Durability = Literal["fsync", "batched"]
Step = TypeVar("Step")

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
BATCH_WINDOW_S = 0.1


class JournalWriter:
    """Appends hash-chained records to one journal (and its rotated segments)."""

    def __init__(
        self,
        path: Path,
        *,
        durability: Durability = "fsync",
        sealer: BodySealer | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        clock: Callable[[], float] = time.time,
        file_mode: int = 0o600,
        batch_window_s: float = BATCH_WINDOW_S,
    ) -> None:
        """``file_mode`` 0640 lets the group read the journal (a dedicated account's humans
        verify it that way); nothing but the owner may ever write it. ``batch_window_s`` bounds
        how long a ``batched`` record waits for its fsync."""
        if segment_bytes < 4096:
            raise ValueError("segment_bytes must be at least 4096")
        self.path = path
        self.durability = durability
        self.sealer = sealer
        self.segment_bytes = segment_bytes
        if file_mode & ~0o640:
            raise ValueError("a journal is at most 0640: only its writer may change it")
        self._file_mode = file_mode
        self._batch_window_s = batch_window_s
        self._kinds = KindNames()
        self._timestamps = Timestamps(clock)
        self._mutex = threading.Lock()
        self._commit = GroupCommit()
        self._head = GENESIS
        self._fd = -1
        self._ino: tuple[int, int] | None = None
        self._known_size = -1  # the size we left the file at; -1 = unknown, re-read the tail
        self._synced_once = False
        self._external_changes = 0
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock_fd = journal_file.open_private(journal_file.lock_path(path), os.O_RDWR)

    # -- public -------------------------------------------------------------------------------

    @property
    def head(self) -> JournalHead:
        """The last record this process knows the journal to end with (seq, hash)."""
        return self._head

    @property
    def external_changes(self) -> int:
        """How often the file was found changed by someone else (appended to, cut, replaced)
        since this writer first read it. A journal with one writer should keep this at 0."""
        return self._external_changes

    def append(
        self, kind: str, body: Mapping[str, object], *, ref: Mapping[str, int] | None = None
    ) -> JournalHead:
        """Append one record; in ``fsync`` mode it is on disk when this returns.

        ``ref`` is stored in the clear beside a sealed body (see
        :func:`~safeport.shared.audit.members.record_members`).
        """
        kind_json = self._kinds.json(kind)
        members = record_members(body, ref, self.sealer)
        with self._mutex:
            head = self._file_locked("write", lambda: self._append_locked(kind_json, members))
            ticket = self._commit.wrote()
            if self.durability == "batched":
                self._schedule_flush()
                return head
        try:
            self._commit.sync(ticket, self._current_fd, waiting_hook(self.sealer))
        except OSError as exc:
            raise self._unavailable("sync", exc) from exc
        return head

    def read_head(self) -> JournalHead:
        """Take the head from the file as it is now (a torn tail is recovered first, as an
        append would). For a restarted gateway, after it compared the file with the heads it
        signed before: from then on it signs what it found, with any alarm on record."""
        with self._mutex:
            self._file_locked("read", self._sync_with_file)
            return self._head

    def _file_locked(self, what: str, step: Callable[[], Step]) -> Step:
        """Run ``step`` on the open journal under the lock other processes honour too (the
        caller holds the mutex); a failing file is ``JournalUnavailable`` for ``what``."""
        if self._closed:
            raise JournalUnavailable(f"journal {self.path.name} is closed")
        try:
            journal_file.lock(self._lock_fd)
            try:
                return step()
            finally:
                journal_file.unlock(self._lock_fd)
        except OSError as exc:
            raise self._unavailable(what, exc) from exc

    def flush(self) -> None:
        """fsync now (batched mode flushes by itself within the batch window)."""
        with self._mutex:
            self._commit.sync_all(self._fd)

    def close(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            with contextlib.suppress(OSError):
                self._commit.sync_all(self._fd)
            for fd in (self._fd, self._lock_fd):
                if fd >= 0:
                    os.close(fd)
            self._fd = self._lock_fd = -1

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _unavailable(self, doing: str, exc: OSError) -> JournalUnavailable:
        return JournalUnavailable(f"cannot {doing} journal {self.path.name}: {exc.strerror or exc}")

    def _current_fd(self) -> int:
        return self._fd

    def _append_locked(self, kind_json: bytes, members: bytes) -> JournalHead:
        size = self._sync_with_file()
        line, head = format_record_json(self._head, self._timestamps.now(), kind_json, members)
        if len(line) > MAX_RECORD_BYTES:
            raise AuditError(f"record of {len(line)} bytes is over the 1 MiB limit")
        if size > 0 and size + len(line) > self.segment_bytes:
            self._rotate()
            size = 0
        try:
            journal_file.write_all(self._fd, line)
        except OSError:
            # A full disk: part of the line may be in the file. Cut it off now (that needs no
            # space), so the file still ends with a whole record and the next append goes on
            # once there is room, with no restart; if even that fails, the next append finds a
            # torn tail and trims it. (A failed fsync is another matter: see group_commit.)
            try:
                os.ftruncate(self._fd, size)
                self._known_size = size
            except OSError:
                self._known_size = -1
            raise
        self._known_size = size + len(line)
        self._head = head
        return head

    def _sync_with_file(self) -> int:
        """Make our fd and head match the journal on disk; trim a torn tail. Returns the size."""
        size = self._reopen_if_replaced()
        if size == self._known_size:
            return size
        if self._synced_once:
            self._external_changes += 1
        self._synced_once = True
        if size == 0:
            self._head = tail.head_of_previous_segment(self.path)
            return 0
        last_line, torn = tail.read_tail(self._fd, size)
        if torn:
            if last_line is not None:
                self._head = tail.head_of(last_line, self.path)
            else:
                # Only a torn line: a crash while writing the first record of a fresh segment
                # goes on from the segment before it, not from genesis (a new chain at seq 1).
                self._head = tail.head_of_previous_segment(self.path)
            size = self._recover(size, torn)
        else:
            assert last_line is not None
            self._head = tail.head_of(last_line, self.path)
        return size

    def _recover(self, size: int, torn: bytes) -> int:
        keep_from = size - len(torn)
        os.ftruncate(self._fd, keep_from)
        line, head = format_record_json(
            self._head, self._timestamps.now(), b'"recovery"', tail.recovery_members(torn)
        )
        journal_file.write_all(self._fd, line)
        # Evidence first: the recovery record is durable before anything else is appended.
        os.fsync(self._fd)
        self._head = head
        return keep_from + len(line)

    def _reopen_if_replaced(self) -> int:
        """Open the file at the path if it is not the one we hold; return its size.

        One ``lstat`` serves both questions: when the path still names our inode, its size is
        the size of the file our descriptor appends to.
        """
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            pass
        else:
            if self._fd >= 0 and (st.st_dev, st.st_ino) == self._ino:
                return st.st_size
        if self._fd >= 0:
            self._commit.sync_all(self._fd)
            os.close(self._fd)
            self._fd = -1
        self._fd = journal_file.open_private(self.path, os.O_RDWR | os.O_APPEND, self._file_mode)
        st = os.fstat(self._fd)
        self._ino = (st.st_dev, st.st_ino)
        self._known_size = -1
        return st.st_size

    def _rotate(self) -> None:
        # Forced: records another process wrote but has not fsynced yet must be on disk before
        # the first record of the next segment, which chains on them, can be.
        self._commit.sync_all(self._fd, force=True)
        target = journal_file.next_segment(self.path)
        os.rename(self.path, target)
        fsync_dir(self.path.parent)
        os.close(self._fd)
        self._fd = -1
        self._ino = None
        self._reopen_if_replaced()
        self._known_size = 0

    def _schedule_flush(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self._batch_window_s, self._timed_flush)
            self._timer.daemon = True
            self._timer.start()

    def _timed_flush(self) -> None:
        with self._mutex:
            self._timer = None
            if not self._closed:
                with contextlib.suppress(OSError):
                    self._commit.sync_all(self._fd)
