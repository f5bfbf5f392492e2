"""Listing pages served again while their folder's inotify watch reports no change.

A listing examines every entry it serves (an ``fstatat`` and the policy's judgement each), and
an agent lists the same folders again and again. A page is kept only while nothing in its
folder has changed: the folder is watched before its entries are examined, every event is
read before a page is served again, and an event for the folder drops every page of it. What
the key holds decides the rest: the folder's identity and change times, the path it was
reached by, the page asked for, and the policy and client scope it was judged under.

What no event on the folder reports is not kept: a page holding a symbolic link (judged by
where it leads, which may change anywhere) is examined afresh every time. A hard link made to
one of its files through another folder changes the file's link count without an event here,
and a write through that other name changes its size without one; the page then shows the
file as before the link (readable, at its old size, even once the other name is gone again),
until the folder next changes, and the read itself judges the file afresh (reads never use
these pages). A mount changes what a name is
with no event on its folder: a change of the mount table drops every page, and a folder
holding a mount point, or on a network or FUSE file system (whose other side changes files
with no event here), keeps none (``mount_table.py``). Where inotify is missing, a
watch cannot be added (the user's limit), or events were lost (a full queue), pages are not
kept or are dropped.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from safeport.context_server.workspace.inotify import (
    FOLDER_CHANGES,
    IN_Q_OVERFLOW,
    AddWatch,
    RemoveWatch,
    folder_path,
    open_instance,
    read_events,
)
from safeport.context_server.workspace.mount_table import MountTable

PageT = TypeVar("PageT")

# Pages kept at once (each a few hundred entries at most), and so folders watched at once.
MAX_PAGES = 64
# Folders whose generation is remembered; past this, every generation starts over (the epoch
# moves, so a page being made meanwhile is not kept).
MAX_GENERATIONS = 100_000


@dataclass(frozen=True)
class Watched:
    """A folder watched before its page was made: the page is kept only if nothing in the
    folder changed between this moment and the page's :meth:`FolderPages.keep`."""

    wd: int
    generation: int


class FolderPages(Generic[PageT]):
    """The pages of one workspace; safe to use from any thread until :meth:`close`."""

    def __init__(self, max_pages: int = MAX_PAGES) -> None:
        self._lock = threading.Lock()
        self._max = max_pages
        self._pages: OrderedDict[Hashable, tuple[int, object, PageT]] = OrderedDict()
        self._keys: dict[int, set[Hashable]] = {}  # watch → the keys of its pages
        # Watch → the pages being made under it (between watch() and keep() or release()). A
        # watch backing neither is removed: the user's watches are few, and shared with every
        # other program of the user (the index's watch among them).
        self._making: dict[int, int] = {}
        # Bumped by every event of a watch (and, for all, by a lost event): a page made while
        # its folder's generation moved is not kept.
        self._generations: dict[int, int] = {}
        self._epoch = 0
        self._fd = -1
        self._add: AddWatch | None = None
        self._remove: RemoveWatch | None = None
        self._closer: weakref.finalize[[int], FolderPages[PageT]] | None = None
        # inotify instances are few per user (128 by default) and the index holds one: this
        # one is opened at the first listing, and not asked for again once refused or closed.
        self._opened = False
        self._mounts: MountTable | None = None

    def close(self) -> None:
        """Close the instance; later calls keep and find nothing."""
        with self._lock:
            self._opened = True
            self._shut()

    def _open(self) -> bool:
        if not self._opened:
            self._opened = True
            instance = open_instance()
            if instance is not None:
                self._fd, self._add, self._remove = instance
                # An instance dropped without close() still gives its descriptor back.
                self._closer = weakref.finalize(self, os.close, self._fd)
                self._closer.atexit = False
                self._mounts = MountTable()
        return self._fd >= 0

    def _shut(self) -> None:
        if self._closer is not None:
            self._closer()
        if self._mounts is not None:
            self._mounts.close()
        self._fd = -1
        self._pages.clear()
        self._keys.clear()
        self._making.clear()

    def find(self, key: Hashable, judged_by: object) -> PageT | None:
        """The page kept under ``key`` for the same policy object, if its folder has not
        changed since it was made."""
        with self._lock:
            if self._fd < 0 or not self._pages:
                return None
            self._read_events()
            held = self._pages.get(key)
            if held is None or held[1] is not judged_by:
                return None
            self._pages.move_to_end(key)
            return held[2]

    def watch(self, dir_fd: int) -> Watched | None:
        """Watch the folder open on ``dir_fd`` before its entries are examined; None when it
        cannot be watched (its page is then not kept)."""
        with self._lock:
            if not self._open() or self._add is None:
                return None
            self._read_events()
            if self._fd < 0:
                return None
            if self._mounts is None or self._mounts.unseen(dir_fd):
                return None  # no event would tell of a change (``mount_table.py``)
            wd = self._add(self._fd, folder_path(dir_fd), FOLDER_CHANGES)
            if wd < 0:
                return None
            self._making[wd] = self._making.get(wd, 0) + 1
            return Watched(wd, self._generation(wd))

    def release(self, watched: Watched) -> None:
        """Keep nothing of a page made under ``watched`` (it holds a link, or was not made)."""
        with self._lock:
            self._made(watched.wd)
            self._unwatch_if_unused(watched.wd)

    def keep(self, key: Hashable, judged_by: object, watched: Watched, page: PageT) -> None:
        """Keep ``page`` unless its folder changed since :meth:`watch`."""
        with self._lock:
            self._made(watched.wd)
            if self._fd < 0:
                return
            self._read_events()
            if self._fd < 0:
                return
            if self._generation(watched.wd) != watched.generation:
                self._unwatch_if_unused(watched.wd)
                return
            old = self._pages.pop(key, None)
            self._pages[key] = (watched.wd, judged_by, page)
            self._keys.setdefault(watched.wd, set()).add(key)
            # After the new page is in: the page it replaces may have been its watch's only one.
            if old is not None and old[0] != watched.wd:
                self._forget_key(old[0], key)
            while len(self._pages) > self._max:
                oldest, (wd, _, _) = self._pages.popitem(last=False)
                self._forget_key(wd, oldest)

    def _generation(self, wd: int) -> int:
        # A watch's generation is never forgotten while a page made under it may be kept:
        # forgetting it would let a page made before a change match again.
        return self._epoch + self._generations.get(wd, 0)

    def _read_events(self) -> None:
        if self._mounts is None or self._mounts.changed():  # a mount raises no event
            self._drop_all()
        events = read_events(self._fd)
        if events is None:  # unreadable: nothing can be vouched for any more
            self._drop_all()
            self._shut()
            return
        for wd, mask, _name in events:
            if mask & IN_Q_OVERFLOW:
                self._drop_all()
                continue
            self._generations[wd] = self._generations.get(wd, 0) + 1
            keys = self._keys.pop(wd, None)
            if keys is not None:
                for key in keys:
                    self._pages.pop(key, None)
                self._unwatch_if_unused(wd)
        if len(self._generations) > MAX_GENERATIONS:
            self._drop_all()
            self._generations.clear()

    def _drop_all(self) -> None:
        # The epoch moves every generation at once (by more than any one folder's count could
        # make up for): a page being made is not kept either.
        self._epoch += 1 << 40
        self._pages.clear()
        held = list(self._keys)
        self._keys.clear()
        for wd in held:
            self._unwatch_if_unused(wd)

    def _forget_key(self, wd: int, key: Hashable) -> None:
        keys = self._keys.get(wd)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._keys[wd]
        self._unwatch_if_unused(wd)

    def _made(self, wd: int) -> None:
        left = self._making.get(wd, 0) - 1
        if left > 0:
            self._making[wd] = left
        else:
            self._making.pop(wd, None)

    def _unwatch_if_unused(self, wd: int) -> None:
        unused = wd not in self._keys and wd not in self._making
        if unused and self._remove is not None and self._fd >= 0:
            self._remove(self._fd, wd)
