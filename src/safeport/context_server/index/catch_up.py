"""The start-up check: which entries changed since the recorded walk, by ``stat`` alone.

Every recorded folder is ``lstat``-ed: one whose identity changed is walked again whole; one
whose mtime changed is listed, and only the names that came or went are walked. Every indexed
file and every file the walk saw but did not index is ``lstat``-ed too, since a file's content
changes its own mtime, not its folder's. The answer is a list of touched entries, the same
shape folder events give, so the refresh that follows re-reads them through the same walk and
per-file step as a walk of everything. Paths here only decide what to walk again: whatever the
walk stores, it reaches by descriptors, never by these paths.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence

from safeport.context_server.index.inotify_watch import Touched
from safeport.context_server.index.sqlite_store import MAX_INDEXED_BYTES
from safeport.context_server.index.walk_record import Key, WalkRecord
from safeport.context_server.policy.display_names import display_name
from safeport.context_server.workspace.model import ServedRoot

Rows = Sequence[tuple[Key, int, int]]  # ((root, rel), size, mtime_ns) per indexed file
# A display name holding one of these may differ from the name on disk (``display_names.py``):
# its path cannot be spelled from the row, so the entry is always walked again.
_ESCAPED = ("%", "[REDACTED:")


def touched_since(
    record: WalkRecord, roots: Iterable[ServedRoot], rows: Rows, paused: Iterator[None]
) -> list[Touched] | None:
    """The entries to walk again, or None when only a walk of everything will do (a root
    moved or changed identity). ``paused`` is advanced every few hundred ``stat`` calls (the
    caller yields to requests there)."""
    paths = {r.name: os.fsencode(r.path) for r in roots}
    if any((name, "") not in record.folders for name in paths):
        return None
    names = _names_by_folder(record, rows, paused)
    touched: list[Touched] = []
    for count, ((root, rel), seen) in enumerate(list(record.folders.items())):
        if count % 256 == 0:
            next(paused, None)
        if root not in paths:
            continue
        parts = tuple(rel.split("/")) if rel else ()
        try:
            st = os.lstat(_spelled(paths[root], rel))
        except (OSError, ValueError):
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != seen[:2]:
            if not parts:
                return None
            touched.append(Touched(root, parts, st is None))
        elif st.st_mtime_ns != seen[2] or _escaped(rel):
            listed = _listed(paths[root], rel)
            if listed is None:
                if not parts:
                    return None
                touched.append(Touched(root, parts, True))
                continue
            # Its stat before its listing: a change after the listing moves the mtime again.
            record.saw_folder((root, rel), st.st_dev, st.st_ino, st.st_mtime_ns)
            known = names.get((root, rel), set())
            touched += [Touched(root, (*parts, n), False) for n in sorted(listed - known)]
            touched += [Touched(root, (*parts, n), True) for n in sorted(known - listed)]
    for count, ((root, rel), size, mtime_ns) in enumerate(_files(record, rows)):
        if count % 256 == 0:
            next(paused, None)
        if root in paths and not _same_file(paths[root], rel, size, mtime_ns, (root, rel), record):
            touched.append(Touched(root, tuple(rel.split("/")), False))
    return touched


def _files(record: WalkRecord, rows: Rows) -> Iterator[tuple[Key, int, int]]:
    yield from rows
    for key, (size, mtime_ns) in record.unstored.items():
        yield key, size, mtime_ns
    for key in record.linked:
        yield key, -2, -2


def _same_file(
    root: bytes, rel: str, size: int, mtime_ns: int, key: Key, record: WalkRecord
) -> bool:
    if _escaped(rel):
        return False
    try:
        st = os.lstat(_spelled(root, rel))
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if key in record.linked:
        return st.st_nlink != 1  # still left out for its links
    if st.st_nlink != 1:
        return False  # a link appeared: the walk leaves it out now
    if size == -1:
        return st.st_size > MAX_INDEXED_BYTES  # still too large, whatever it holds
    return (st.st_size, st.st_mtime_ns) == (size, mtime_ns)


def _names_by_folder(record: WalkRecord, rows: Rows, paused: Iterator[None]) -> dict[Key, set[str]]:
    """The names the recorded walk met in each folder: its subfolders and its files."""
    names: dict[Key, set[str]] = {}
    keys: list[Key] = [*record.folders, *record.unstored, *record.linked]
    keys += [key for key, _size, _mtime in rows]
    for count, (root, rel) in enumerate(keys):
        if count % 4096 == 0:
            next(paused, None)
        if not rel:
            continue
        folder, _, name = rel.rpartition("/")
        names.setdefault((root, folder), set()).add(name)
    return names


def _listed(root: bytes, rel: str) -> set[str] | None:
    """The folder's names, as display names (the spelling the rows and the record use)."""
    try:
        return {display_name(n) for n in os.listdir(_spelled(root, rel))}
    except (OSError, ValueError):
        return None


def _spelled(root: bytes, rel: str) -> bytes:
    return root + b"/" + os.fsencode(rel) if rel else root


def _escaped(rel: str) -> bool:
    return any(mark in rel for mark in _ESCAPED)
