"""Append records to a journal so that several processes, crashes and rotation keep one chain.

Every append runs under an exclusive ``flock`` on a lock file beside the journal, so writers in
different processes serialise and always extend the real last record. The writer remembers the
head and the file size it left; when another process has appended since, it re-reads only the
last line. A torn last line (a crash mid-write) is trimmed under the lock and replaced by a
``recovery`` record that keeps the trimmed bytes' length, digest and (bounded) content, so a trim
can never quietly erase evidence.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol

from safeport.errors import AuditError, JournalUnavailable
from safeport.shared.audit.record import (
    GENESIS,
    JournalHead,
    RecordLayoutError,
    canonical_json,
    format_record_json,
    parse_head,
)

Durability = Literal["fsync", "batched"]

MAX_RECORD_BYTES = 1024 * 1024
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
BATCH_WINDOW_S = 0.1
RECOVERY_KEEP_BYTES = 64 * 1024
_KIND_RE = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_TAIL_BLOCK = 64 * 1024
_REF_NAME_RE = re.compile(r"[a-z][a-z_]{0,31}")


class BodySealer(Protocol):
    """Encrypts a record body so that only the audit key's holder can read it.

    The returned members replace ``body`` in the record (as ``sealed``); the chain covers the
    sealed bytes, so verification never needs the key.
    """

    def seal(self, plaintext: bytes) -> Mapping[str, str]: ...


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
    ) -> None:
        """``file_mode`` 0640 lets the group read the journal (a dedicated account's humans
        verify it that way); nothing but the owner may ever write it."""
        if segment_bytes < 4096:
            raise ValueError("segment_bytes must be at least 4096")
        self.path = path
        self.durability = durability
        self.sealer = sealer
        self.segment_bytes = segment_bytes
        self._clock = clock
        if file_mode & ~0o640:
            raise ValueError("a journal is at most 0640: only its writer may change it")
        self._file_mode = file_mode
        self._mutex = threading.Lock()
        self._head = GENESIS
        self._fd = -1
        self._ino: tuple[int, int] | None = None
        self._known_size = -1  # the size we left the file at; -1 = unknown, re-read the tail
        self._synced_once = False
        self._external_changes = 0
        self._dirty = False
        self._timer: threading.Timer | None = None
        self._closed = False
        self._lock_fd = _open_private(_lock_path(path), os.O_RDWR)

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

        ``ref`` is stored in the clear beside a sealed body: small counters (an intent's
        sequence, a vault generation) that a scan must read while the vault is locked. Never a
        secret, never an argument's value: only names of the gateway's own numbering.
        """
        if not _KIND_RE.fullmatch(kind):
            raise AuditError(f"invalid record kind {kind!r}")
        members = self._members(body, ref)
        kind_json = b'"%s"' % kind.encode("ascii")  # the pattern admits nothing JSON would escape
        with self._mutex:
            if self._closed:
                raise JournalUnavailable(f"journal {self.path.name} is closed")
            try:
                with _flocked(self._lock_fd):
                    return self._append_locked(kind_json, members)
            except OSError as exc:
                raise JournalUnavailable(
                    f"cannot write journal {self.path.name}: {exc.strerror or exc}"
                ) from exc

    def read_head(self) -> JournalHead:
        """Take the head from the file as it is now (a torn tail is recovered first, as an
        append would). For a restarted gateway, after it compared the file with the heads it
        signed before: from then on it signs what it found, with any alarm on record."""
        with self._mutex:
            if self._closed:
                raise JournalUnavailable(f"journal {self.path.name} is closed")
            try:
                with _flocked(self._lock_fd):
                    self._sync_with_file()
            except OSError as exc:
                raise JournalUnavailable(
                    f"cannot read journal {self.path.name}: {exc.strerror or exc}"
                ) from exc
            return self._head

    def flush(self) -> None:
        """fsync now (batched mode flushes by itself within the batch window)."""
        with self._mutex:
            self._flush_locked()

    def close(self) -> None:
        with self._mutex:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            with contextlib.suppress(OSError):
                self._flush_locked()
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

    def _members(self, body: Mapping[str, object], ref: Mapping[str, int] | None) -> bytes:
        """The record's members after ``kind``, as canonical JSON (serialised once)."""
        try:
            plain = canonical_json(dict(body))
        except (TypeError, ValueError) as exc:
            raise AuditError(f"record body is not JSON-serialisable: {type(exc).__name__}") from exc
        if len(plain) > MAX_RECORD_BYTES:
            raise AuditError(f"record body of {len(plain)} bytes is over the 1 MiB limit")
        clear = _check_ref(ref)
        if self.sealer is None:
            if clear is None:
                return b'{"body":' + plain + b"}"
            return b'{"body":' + plain + b',"ref":' + canonical_json(clear) + b"}"
        sealed: dict[str, object] = {"sealed": dict(self.sealer.seal(plain))}
        if clear is not None:
            sealed["ref"] = clear
        return canonical_json(sealed)

    def _append_locked(self, kind_json: bytes, members: bytes) -> JournalHead:
        size = self._sync_with_file()
        line, head = format_record_json(self._head, self._timestamp(), kind_json, members)
        if len(line) > MAX_RECORD_BYTES:
            raise AuditError(f"record of {len(line)} bytes is over the 1 MiB limit")
        if size > 0 and size + len(line) > self.segment_bytes:
            self._rotate()
            size = 0
        _write_all(self._fd, line)
        self._known_size = size + len(line)
        self._head = head
        self._after_write()
        return head

    def _sync_with_file(self) -> int:
        """Make our fd and head match the journal on disk; trim a torn tail. Returns the size."""
        self._reopen_if_replaced()
        size = os.fstat(self._fd).st_size
        if size == self._known_size:
            return size
        if self._synced_once:
            self._external_changes += 1
        self._synced_once = True
        if size == 0:
            self._head = self._head_of_previous_segment()
            return 0
        last_line, torn = _read_tail(self._fd, size)
        if torn:
            if last_line is not None:
                self._head = _head_of(last_line, self.path)
            else:
                # Only a torn line: a crash while writing the first record of a fresh segment
                # goes on from the segment before it, not from genesis (a new chain at seq 1).
                self._head = self._head_of_previous_segment()
            size = self._recover(size, torn)
        else:
            assert last_line is not None
            self._head = _head_of(last_line, self.path)
        return size

    def _head_of_previous_segment(self) -> JournalHead:
        """An empty active file continues the chain of the newest rotated segment, if any."""
        from safeport.shared.audit.verify import journal_segments

        segments = journal_segments(self.path)[:-1]
        if not segments:
            return GENESIS
        fd = os.open(segments[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            seg_size = os.fstat(fd).st_size
            last_line, torn = _read_tail(fd, seg_size) if seg_size else (None, b"")
        finally:
            os.close(fd)
        if last_line is None or torn:
            raise JournalUnavailable(
                f"the newest segment of journal {self.path.name} does not end with a record",
                hint="run `sp audit verify` and move the journal aside before writing again",
            )
        return _head_of(last_line, self.path)

    def _recover(self, size: int, torn: bytes) -> int:
        keep_from = size - len(torn)
        os.ftruncate(self._fd, keep_from)
        body = {
            "trimmed_bytes": len(torn),
            "trimmed_sha256": hashlib.sha256(torn).hexdigest(),
            "trimmed_b64": base64.b64encode(torn[:RECOVERY_KEEP_BYTES]).decode("ascii"),
            "kept_bytes": min(len(torn), RECOVERY_KEEP_BYTES),
        }
        members = canonical_json({"body": body})
        line, head = format_record_json(self._head, self._timestamp(), b'"recovery"', members)
        _write_all(self._fd, line)
        # Evidence first: the recovery record is durable before anything else is appended.
        os.fsync(self._fd)
        self._head = head
        return keep_from + len(line)

    def _reopen_if_replaced(self) -> None:
        try:
            st = os.lstat(self.path)
            current: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            current = None
        if self._fd >= 0 and current == self._ino:
            return
        if self._fd >= 0:
            self._flush_locked()
            os.close(self._fd)
            self._fd = -1
        self._fd = _open_private(self.path, os.O_RDWR | os.O_APPEND, self._file_mode)
        st = os.fstat(self._fd)
        self._ino = (st.st_dev, st.st_ino)
        self._known_size = -1

    def _rotate(self) -> None:
        self._flush_locked()
        target = _next_segment(self.path)
        os.rename(self.path, target)
        _fsync_dir(self.path.parent)
        os.close(self._fd)
        self._fd = -1
        self._ino = None
        self._reopen_if_replaced()
        self._known_size = 0

    def _after_write(self) -> None:
        if self.durability == "fsync":
            os.fsync(self._fd)
            return
        self._dirty = True
        if self._timer is None:
            self._timer = threading.Timer(BATCH_WINDOW_S, self._timed_flush)
            self._timer.daemon = True
            self._timer.start()

    def _timed_flush(self) -> None:
        with self._mutex:
            self._timer = None
            if not self._closed:
                with contextlib.suppress(OSError):
                    self._flush_locked()

    def _flush_locked(self) -> None:
        if self._dirty and self._fd >= 0:
            os.fsync(self._fd)
        self._dirty = False

    def _timestamp(self) -> bytes:
        """RFC 3339 UTC with microseconds, already as a JSON string."""
        now = self._clock()
        seconds = int(now)
        micros = int((now - seconds) * 1_000_000)
        return b'"%s.%06dZ"' % (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)).encode(),
            micros,
        )


def _check_ref(ref: Mapping[str, int] | None) -> dict[str, int] | None:
    """Only short lowercase names and non-negative integers: nothing else can go in the clear."""
    if not ref:
        return None
    clear: dict[str, int] = {}
    for name, value in ref.items():
        if not _REF_NAME_RE.fullmatch(name):
            raise AuditError(f"invalid reference name {name!r}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise AuditError(f"reference {name!r} must be a non-negative integer")
        clear[name] = value
    return clear


def _head_of(line: bytes, path: Path) -> JournalHead:
    try:
        return parse_head(line)
    except RecordLayoutError as exc:
        # Appending after a damaged record would bless it; stop and let a person look.
        raise JournalUnavailable(
            f"the last record of journal {path.name} is damaged ({exc})",
            hint="run `sp audit verify` and move the journal aside before writing again",
        ) from exc


def _read_tail(fd: int, size: int) -> tuple[bytes | None, bytes]:
    """Return (the last complete line without its newline, the torn bytes after it)."""
    end = size
    buf = b""
    while True:
        start = max(0, end - _TAIL_BLOCK)
        buf = os.pread(fd, end - start, start) + buf
        end = start
        last_nl = buf.rfind(b"\n")
        if last_nl < 0:
            if start == 0:
                return None, buf  # the whole file is one torn line
        else:
            prev_nl = buf.rfind(b"\n", 0, last_nl)
            if prev_nl >= 0 or start == 0:
                return buf[prev_nl + 1 : last_nl], buf[last_nl + 1 :]
        if len(buf) > 2 * MAX_RECORD_BYTES + _TAIL_BLOCK:
            raise JournalUnavailable("the journal's last line is longer than any record can be")


def _open_private(path: Path, flags: int, mode: int = 0o600) -> int:
    """Open (creating it with ``mode``) a regular, single-link file we own, never through a
    symlink, and refuse one with any permission bit beyond ``mode``."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise JournalUnavailable(f"journal path {path} is a symbolic link; refusing") from exc
        raise JournalUnavailable(f"cannot open {path}: {exc.strerror}") from exc
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = "is not a regular file"
    elif st.st_nlink != 1:
        problem = f"has {st.st_nlink} hard links"
    elif st.st_uid != os.geteuid():
        problem = "is owned by another user"
    elif stat.S_IMODE(st.st_mode) & ~mode & 0o7777:
        problem = f"has mode {stat.S_IMODE(st.st_mode):04o}, not {mode:04o}"
    if problem:
        os.close(fd)
        raise JournalUnavailable(f"journal file {path} {problem}; refusing to write to it")
    if stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)  # a umask narrower than ``mode`` would hide it from its readers
    return fd


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _next_segment(path: Path) -> Path:
    from safeport.shared.audit.verify import journal_segments

    existing = journal_segments(path)[:-1]
    number = 1
    if existing:
        number = int(existing[-1].name.split(".")[-2]) + 1
    stem = path.name.removesuffix(".jsonl")
    return path.with_name(f"{stem}.{number:06d}.jsonl")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _flocked(fd: int) -> Iterator[None]:
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
