"""Descriptor-level steps beneath a folder: open, probe, stat, read a link, read bytes.

Every call names its object relative to a folder descriptor and never follows a symlink, so
what it sees is the entry itself, not whatever a path string leads to when the call runs.
Failures become :class:`Refused` with a stable reason and no detail from the OS.
"""

from __future__ import annotations

import errno
import os
import stat

from safeport.context_server.policy.read_policy import Refused, refusal
from safeport.context_server.policy.request_path import MAX_PATH_CHARS

O_PATH = getattr(os, "O_PATH", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
# An O_PATH descriptor opens nothing (no device side effects, no FIFO), yet fstat works on it.
PROBE_FLAGS = (
    (O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    if O_PATH
    else (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
)


def probe(dir_fd: int, raw: bytes) -> tuple[int, os.stat_result]:
    """A descriptor on the entry itself and its fstat; -1 for a symlink, which is not opened.

    With O_PATH (Linux) the link itself is opened and fstat says it is one. Elsewhere the entry
    is first examined with fstatat relative to the folder's descriptor, then opened."""
    try:
        if not O_PATH:
            st = os.stat(raw, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                return -1, st
        fd = os.open(raw, PROBE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise lookup_failure(exc) from None
    try:
        return fd, os.fstat(fd)
    except OSError:
        os.close(fd)
        raise refusal("changed") from None


def stat_entry(dir_fd: int, raw: bytes | str) -> os.stat_result:
    """The entry's own lstat, relative to its folder's descriptor (``fstatat`` with
    ``AT_SYMLINK_NOFOLLOW``): one call, nothing opened, a link described as a link."""
    return os.stat(raw, dir_fd=dir_fd, follow_symlinks=False)


def read_entry(dir_fd: int, disk: str, seen: os.stat_result, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file named ``disk`` (its name on disk, as
    ``scandir`` gave it) in a folder, if it is still the file ``seen`` describes (same inode,
    one link), and never past its size at open."""
    try:
        fd = os.open(disk, FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            return None
        return read_up_to(fd, 0, min(limit, st.st_size))
    except OSError:
        return None
    finally:
        os.close(fd)


def read_link(dir_fd: int, raw: bytes) -> bytes:
    try:
        target = os.readlink(raw, dir_fd=dir_fd)
    except OSError:
        raise refusal("changed") from None
    if not target or len(target) > MAX_PATH_CHARS:
        raise refusal("not-found")
    return target


def ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def lookup_failure(exc: OSError) -> Refused:
    # ELOOP / ENOTDIR on an O_NOFOLLOW walk: a component became a link or a file after the
    # checks. Everything else is reported as absent, with no detail from the OS.
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return refusal("changed")
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EACCES, errno.EPERM):
        return refusal("unreadable-type")
    return refusal("not-found")


def read_up_to(fd: int, offset: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0:
        block = os.pread(fd, min(remaining, 1 << 20), offset)
        if not block:
            break
        chunks.append(block)
        remaining -= len(block)
        offset += len(block)
    return b"".join(chunks)
