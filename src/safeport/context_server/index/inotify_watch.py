"""Which entries changed since the last look: inotify on every folder the index walk entered.

Linux only (``inotify(7)`` through libc); elsewhere :func:`open_folder_watch` returns None and
every refresh walks the whole tree. A watch is added on the walk's own folder descriptor (via
``/proc/self/fd``), before the folder's entries are read, so nothing the walk did not see can
change unreported. What inotify cannot report says so: a full event queue, a root moved or
deleted, or a watch that could not be added make :meth:`FolderWatch.drain` answer incomplete,
and the caller walks everything. Writes through a shared mapping and hard-link counts changed
from outside the tree raise no event on the folder; the index's periodic full walk covers them.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import sys
import weakref
from dataclasses import dataclass

from safeport.context_server.policy.display_names import display_name

log = logging.getLogger(__name__)

# <sys/inotify.h>
_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_GONE = _IN_DELETE | _IN_MOVED_FROM
_EVENT = struct.Struct("iIII")
_READ_BYTES = 1 << 16

Folder = tuple[str, tuple[str, ...]]  # (root name, parts)


@dataclass(frozen=True)
class Touched:
    """An entry whose folder reported a change to it (created, written, moved, removed)."""

    root: str
    parts: tuple[str, ...]
    gone: bool  # the event removed the name (the entry may be back by the time it is read)


@dataclass(frozen=True)
class Drained:
    touched: tuple[Touched, ...]
    # False: something changed that the events cannot say (overflow, a root moved, a folder
    # left unwatched); only a walk of everything gives the true state.
    complete: bool


class FolderWatch:
    """inotify watches on the folders of the served roots, keyed to where the walk saw them."""

    def __init__(self, fd: int, add: _AddWatch, remove: _RemoveWatch) -> None:
        # inotify instances are few per user (128 by default): one dropped without close()
        # still gives its descriptor back.
        self._closer = weakref.finalize(self, os.close, fd)
        # Not at interpreter exit: a thread may still hold it then, and the process's end
        # gives it back anyway (closing it under that thread is how a number gets reused).
        self._closer.atexit = False
        self._fd = fd
        self._add = add
        self._remove = remove
        self._folders: dict[int, Folder] = {}
        self._previous: dict[int, Folder] = {}
        self._complete = False

    @property
    def complete(self) -> bool:
        """Whether every folder of the last walk is watched and no event was lost since."""
        return self._complete

    def close(self) -> None:
        self._closer()
        self._fd = -1

    def begin_walk(self) -> None:
        """Before walking everything: pending events are moot, every folder is re-watched."""
        self._read_events()
        self._previous, self._folders = self._folders, {}
        self._complete = True

    def end_walk(self) -> None:
        """After walking everything: folders no longer walked are no longer watched."""
        for wd in self._previous.keys() - self._folders.keys():
            self._unwatch(wd)
        self._previous = {}

    def watch(self, root: str, parts: tuple[str, ...], dir_fd: int) -> None:
        """Watch the folder open on ``dir_fd`` (the object itself, whatever its path now).
        Called by the index's walk only, which the index stops and joins before it closes
        this watch: the descriptor is never used after its close."""
        if self._fd < 0:
            raise ValueError("the folder watch is closed")
        wd = self._add(self._fd, f"/proc/self/fd/{dir_fd}".encode(), _MASK)
        if wd < 0:
            # ENOSPC: the user's watch limit; ENOENT: the folder went meanwhile. Either way
            # the events cannot vouch for the tree, and refreshes check it by stat instead.
            self._complete = False
            reason = errno.errorcode.get(-wd, str(-wd))
            if -wd == errno.ENOSPC:
                log.info("folder watch not added (%s: the user's inotify watch limit)", reason)
            else:
                log.info("folder watch not added (%s)", reason)
            return
        self._folders[wd] = (root, parts)

    def forget(self, root: str, prefix: tuple[str, ...]) -> None:
        """Stop watching ``prefix`` and every folder below it (it moved or went away)."""
        size = len(prefix)
        for wd, (r, parts) in list(self._folders.items()):
            if r == root and parts[:size] == prefix:
                del self._folders[wd]
                self._unwatch(wd)

    def drain(self) -> Drained:
        """The entries touched since the last drain, in event order, and whether that is all."""
        touched: list[Touched] = []
        complete = self._complete
        for wd, mask, name in self._read_events():
            if mask & _IN_Q_OVERFLOW:
                complete = False
                continue
            folder = self._folders.get(wd)
            if folder is None:
                continue  # a watch already forgotten
            root, parts = folder
            if mask & _IN_IGNORED:
                del self._folders[wd]
                continue
            if not name:
                # The folder itself: its parent reports its move or removal by name; a root
                # has no parent here, and an unmount leaves nothing to read.
                if not parts and mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT):
                    complete = False
                continue
            touched.append(Touched(root, (*parts, display_name(name)), bool(mask & _GONE)))
        self._complete = complete
        return Drained(tuple(touched), complete)

    def _unwatch(self, wd: int) -> None:
        self._remove(self._fd, wd)

    def _read_events(self) -> list[tuple[int, int, bytes]]:
        events: list[tuple[int, int, bytes]] = []
        while True:
            try:
                data = os.read(self._fd, _READ_BYTES)
            except BlockingIOError:
                return events
            except OSError as exc:
                log.warning("folder watch unreadable (%s)", type(exc).__name__)
                self._complete = False
                return events
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                name = data[start : start + length].rstrip(b"\0")
                events.append((wd, mask, name))
                offset = start + length


class _AddWatch:
    def __init__(self, libc: ctypes.CDLL) -> None:
        self._call = libc.inotify_add_watch
        self._call.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._call.restype = ctypes.c_int

    def __call__(self, fd: int, path: bytes, mask: int) -> int:
        wd = int(self._call(fd, path, mask))
        return wd if wd >= 0 else -ctypes.get_errno()


class _RemoveWatch:
    def __init__(self, libc: ctypes.CDLL) -> None:
        self._call = libc.inotify_rm_watch
        self._call.argtypes = (ctypes.c_int, ctypes.c_int)
        self._call.restype = ctypes.c_int

    def __call__(self, fd: int, wd: int) -> None:
        # EINVAL: the kernel dropped it already (the folder was deleted); nothing to undo.
        self._call(fd, wd)


def open_folder_watch() -> FolderWatch | None:
    """A new watch, or None where inotify is missing or refused (the user's instance limit)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        init.argtypes = (ctypes.c_int,)
        init.restype = ctypes.c_int
        add, remove = _AddWatch(libc), _RemoveWatch(libc)
    except (OSError, AttributeError):
        return None
    fd = int(init(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        code = ctypes.get_errno()
        log.info(
            "no folder watch (%s); refreshes check the tree by stat",
            errno.errorcode.get(code, code),
        )
        return None
    return FolderWatch(fd, add, remove)
