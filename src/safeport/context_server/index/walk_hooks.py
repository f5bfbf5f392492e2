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
from safeport.context_server.policy.read_policy import Refused
from safeport.context_server.workspace.gate import Workspace

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


def watch_recorded(
    record: WalkRecord, workspace: Workspace, watch: FolderWatch | None, paced: Iterator[None]
) -> FolderWatch | None:
    """Begin a walk of ``watch`` (if any) with each folder ``record`` holds watched, each opened
    beneath its root (no link followed), for the start-up check to look at afterwards: a change
    made after the look is an event, one made before it a ``stat`` the check sees. A folder that
    cannot be opened leaves the watch incomplete, so the next refresh checks by ``stat``."""
    if watch is None:
        return None
    watch.begin_walk()
    roots = {root.name: root for root in workspace.roots}
    for count, (name, rel) in enumerate(list(record.folders)):
        if count % 256 == 0:
            next(paced)
        root = roots.get(name)
        if root is None:
            continue
        parts = tuple(rel.split("/")) if rel else ()
        try:
            fd = workspace.descriptors.open_beneath(root, parts, final_dir=True)
        except (Refused, OSError):
            watch.missed()  # gone, replaced or closed to us
            continue
        try:
            watch.watch(name, parts, fd)
        finally:
            os.close(fd)
    return watch
