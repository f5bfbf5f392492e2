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

import errno
import logging
import os
import weakref
from collections import Counter
from dataclasses import dataclass

from safeport.context_server.policy.display_names import display_name
from safeport.context_server.workspace.inotify import (
    FOLDER_CHANGES,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_Q_OVERFLOW,
    IN_UNMOUNT,
    AddWatch,
    RemoveWatch,
    folder_path,
    open_instance,
    read_events,
)

log = logging.getLogger(__name__)

_GONE = IN_DELETE | IN_MOVED_FROM

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

    def __init__(self, fd: int, add: AddWatch, remove: RemoveWatch) -> None:
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
        # How many watched folders lie at or below each (root, path): a refresh forgets every
        # entry it walks again, most of them files, and a look here spares each a pass over
        # every watch (2,000 files changed under 2,000 folders were four million comparisons).
        self._at_or_below: Counter[Folder] = Counter()
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
        # A walk begun before and never ended (a check that gave up for a walk of everything)
        # keeps its own previous watches here too, so the end of this one removes them all.
        self._previous.update(self._folders)
        self._folders = {}
        self._at_or_below = Counter()
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
        wd = self._add(self._fd, folder_path(dir_fd), FOLDER_CHANGES)
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
        self._drop(wd)  # the same folder again (inotify gives its watch the same number)
        self._folders[wd] = (root, parts)
        self._count((root, parts), 1)

    def missed(self) -> None:
        """A folder of the tree could not be watched: the events no longer vouch for it."""
        self._complete = False

    def forget(self, root: str, prefix: tuple[str, ...]) -> None:
        """Stop watching ``prefix`` and every folder below it (it moved or went away)."""
        if not self._at_or_below[(root, prefix)]:
            return  # no watch there: a file, or a folder the walk never reached
        size = len(prefix)
        for wd, (r, parts) in list(self._folders.items()):
            if r == root and parts[:size] == prefix:
                self._drop(wd)
                self._unwatch(wd)

    def _drop(self, wd: int) -> None:
        folder = self._folders.pop(wd, None)
        if folder is not None:
            self._count(folder, -1)

    def _count(self, folder: Folder, change: int) -> None:
        root, parts = folder
        for depth in range(len(parts) + 1):
            key = (root, parts[:depth])
            self._at_or_below[key] += change
            if not self._at_or_below[key]:
                del self._at_or_below[key]

    def drain(self) -> Drained:
        """The entries touched since the last drain, in event order, and whether that is all."""
        touched: list[Touched] = []
        complete = self._complete
        for wd, mask, name in self._read_events():
            if mask & IN_Q_OVERFLOW:
                complete = False
                continue
            folder = self._folders.get(wd)
            if folder is None:
                continue  # a watch already forgotten
            root, parts = folder
            if mask & IN_IGNORED:
                self._drop(wd)
                continue
            if not name:
                # The folder itself: its parent reports its move or removal by name; a root
                # has no parent here, and an unmount leaves nothing to read.
                if not parts and mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
                    complete = False
                continue
            touched.append(Touched(root, (*parts, display_name(name)), bool(mask & _GONE)))
        self._complete = complete
        return Drained(tuple(touched), complete)

    def _unwatch(self, wd: int) -> None:
        self._remove(self._fd, wd)

    def _read_events(self) -> list[tuple[int, int, bytes]]:
        events = read_events(self._fd)
        if events is None:
            self._complete = False
            return []
        return events


def open_folder_watch() -> FolderWatch | None:
    """A new watch, or None where inotify is missing or refused (the user's instance limit)."""
    instance = open_instance()
    if instance is None:
        log.info("no folder watch; refreshes check the tree by stat")
        return None
    return FolderWatch(*instance)
