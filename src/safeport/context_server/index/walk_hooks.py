"""What the index's walk tells the folder watch and the walk record as it goes.

As the walk opens a folder (before it reads the folder's entries), the watch adds a watch on it
and the record notes its identity and mtime: a change after that moves the mtime again, so
nothing changes unseen between the look and the record. Files the walk leaves out for their
size or their links are recorded too, so the start-up check can ``stat`` them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from safeport.context_server.index.inotify_watch import FolderWatch
from safeport.context_server.index.walk_record import WalkRecord

Opened = Callable[[tuple[str, ...], int], None]
LeftOut = Callable[[tuple[str, ...], str], None]
Linked = Callable[[tuple[str, ...]], None]


def walk_hooks(
    record: WalkRecord | None,
    watch: FolderWatch | None,
    root: str,
    where: tuple[tuple[str, ...], str | None],
    linked: set[tuple[str, tuple[str, ...]]],
    paced: Iterator[None],
) -> tuple[Opened, LeftOut, Linked]:
    """The walk's hooks for one root; ``where`` is the walk's (start, only): a walk of one
    entry of its start folder does not vouch for the start folder's other names, so that
    folder is not recorded. ``paced`` is advanced at each folder (stop, or yield to requests)."""
    start, only = where

    def opened(parts: tuple[str, ...], fd: int) -> None:
        next(paced)
        if watch is not None:
            watch.watch(root, parts, fd)
        if record is not None and not (only is not None and parts == start):
            st = os.fstat(fd)
            record.saw_folder((root, "/".join(parts)), st.st_dev, st.st_ino, st.st_mtime_ns)

    def left_out(parts: tuple[str, ...], reason: str) -> None:
        if record is not None and reason == "too-large":
            record.unstored[(root, "/".join(parts))] = (-1, -1)

    def link(parts: tuple[str, ...]) -> None:
        linked.add((root, parts))
        if record is not None:
            record.linked.add((root, "/".join(parts)))

    return opened, left_out, link
