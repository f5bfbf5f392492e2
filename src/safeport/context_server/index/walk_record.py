"""What the last walk proved, kept beside the index so a new process checks instead of walking.

A folder's identity (device, inode) and modification time change whenever an entry is added,
removed or renamed in it, so a folder whose three values are as the walk saw them holds the
same names; the index rows say what each file held (size, mtime), and the files the walk saw
but did not index (binary, too large, more than one link) are listed here with theirs. With
those, a start-up check ``stat``s folders and files instead of reading and tokenising them
(``catch_up.py``), as git's untracked cache does. The record is only valid under the read
policy and secret rules it was made with, and only once the rows it speaks for are committed:
a refresh removes it before writing rows and stores it after its commit, so a refresh that
failed half-way leaves none, and the next process walks everything.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

from safeport import __version__
from safeport.context_server.index.sqlite_module import sqlite3
from safeport.context_server.workspace.gate import Workspace

# Bumped when what a walk stores (or how it judges a name) changes in a way the policy's
# fields do not show.
RECORD_VERSION = 1
# A folder or file changed within this long of being looked at may change again within the
# same timestamp tick unseen (coarse kernel clocks): such an mtime is never trusted.
RACY_S = 2.0

Key = tuple[str, str]  # (root name, relative path; "" for the root itself)
FolderStat = tuple[int, int, int]  # (st_dev, st_ino, st_mtime_ns)
FileStat = tuple[int, int]  # (st_size, st_mtime_ns); size -1: too large to index when seen


class WalkRecord:
    """Folders and unindexed files as the walks of this index saw them (mutable: each walk
    updates what it re-read)."""

    def __init__(
        self,
        digest: str,
        folders: dict[Key, FolderStat] | None = None,
        unstored: dict[Key, FileStat] | None = None,
        linked: set[Key] | None = None,
    ) -> None:
        self.digest = digest
        self.folders: dict[Key, FolderStat] = folders or {}
        self.unstored: dict[Key, FileStat] = unstored or {}
        self.linked: set[Key] = linked or set()

    def saw_folder(self, key: Key, dev: int, ino: int, mtime_ns: int) -> None:
        if time.time_ns() - mtime_ns < RACY_S * 1e9:
            mtime_ns = -1  # checked again next time, whatever its mtime then
        self.folders[key] = (dev, ino, mtime_ns)

    def forget_below(self, root: str, rel: str) -> None:
        """Drop what was recorded for ``rel`` and everything under it (about to be re-walked)."""
        key = (root, rel)
        self.unstored.pop(key, None)
        self.linked.discard(key)
        if rel and key not in self.folders:
            return  # a file, or a folder never recorded: nothing below it is recorded either
        below = rel + "/"
        for table in (self.folders, self.unstored):
            for key in [
                k for k in table if k[0] == root and (k[1] == rel or k[1].startswith(below))
            ]:
                del table[key]
        self.linked = {
            k for k in self.linked if not (k[0] == root and (k[1] == rel or k[1].startswith(below)))
        }


def policy_digest(workspace: Workspace) -> str:
    """What the index's content depends on besides the files: the read policy's fields, the
    secret rules and the code that applies them."""
    policy = workspace.policy
    fields = []
    for f in dataclasses.fields(policy):
        if not f.repr:
            continue
        value = getattr(policy, f.name)
        if isinstance(value, frozenset):
            value = sorted(value)  # a frozenset's order changes from process to process
        fields.append(f"{f.name}={value!r}")
    roots = [f"{r.name}={r.path}" for r in workspace.roots]
    text = "\n".join([__version__, str(RECORD_VERSION), workspace.secrets.rules_digest(), *roots])
    return hashlib.sha256(
        (text + "\n" + "\n".join(fields)).encode("utf-8", "surrogateescape")
    ).hexdigest()


def clear(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM walk_record")
    db.commit()


def save(db: sqlite3.Connection, record: WalkRecord) -> None:
    body = {
        "digest": record.digest,
        "folders": [[*k, *v] for k, v in record.folders.items()],
        "unstored": [[*k, *v] for k, v in record.unstored.items()],
        "linked": [list(k) for k in record.linked],
    }
    db.execute("DELETE FROM walk_record")
    db.execute("INSERT INTO walk_record(id, body) VALUES (0, ?)", (json.dumps(body),))
    db.commit()


def load(db: sqlite3.Connection, digest: str) -> WalkRecord | None:
    """The stored record if it was made under ``digest``, else None (walk everything)."""
    row = db.execute("SELECT body FROM walk_record WHERE id = 0").fetchone()
    if row is None:
        return None
    try:
        body = json.loads(row[0])
        if body["digest"] != digest:
            return None
        return WalkRecord(
            digest,
            {(r, p): (d, i, m) for r, p, d, i, m in body["folders"]},
            {(r, p): (s, m) for r, p, s, m in body["unstored"]},
            {(r, p) for r, p in body["linked"]},
        )
    except (ValueError, KeyError, TypeError):
        return None
