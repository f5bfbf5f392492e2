"""The files a journal lives in: opened without trusting the path, locked, rotated into segments.

Everything here is one system call or a short fixed sequence of them; the writer decides when.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from safeport.errors import JournalUnavailable


def open_private(path: Path, flags: int, mode: int = 0o600) -> int:
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


def lock_path(path: Path) -> Path:
    """The lock file beside a journal: every writer, in any process, appends under its flock."""
    return path.with_name(f".{path.name}.lock")


def lock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX)


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def next_segment(path: Path) -> Path:
    """The name the active file takes when it rotates: one past the newest segment."""
    from safeport.shared.audit.verify import journal_segments

    existing = journal_segments(path)[:-1]
    number = 1
    if existing:
        number = int(existing[-1].name.split(".")[-2]) + 1
    stem = path.name.removesuffix(".jsonl")
    return path.with_name(f"{stem}.{number:06d}.jsonl")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
