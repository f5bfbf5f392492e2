"""The search index as shards: one SQLite file each, written in parallel, read as one.

FTS5's trigram tokenizer is most of a build's time and runs inside SQLite, which releases the
interpreter lock while it steps a statement; one database has one writer, so the index is split
into ``SHARDS`` files by a digest of each file's (root, relative path), and each shard gets its
own writer thread and connection. The walk stays on the caller's thread and decides everything
(kept, added, updated, dropped, the text); the writers only run the statements.

A file's row always lives in the shard its path names, so its delete and insert are one
transaction of one database: a crash between two shards' commits leaves rows missing or stale,
never duplicated, and each row's size and time are those of the text it holds, so the next walk
of everything puts it right (a refresh removes the walk record before it writes and stores it
after its commits, ``walk_record.py``, so the refresh after a crash walks everything).
"""

from __future__ import annotations

import heapq
import queue
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

from safeport.context_server.index import sqlite_store as store
from safeport.context_server.index.sqlite_module import sqlite3
from safeport.context_server.index.sqlite_store import Outcome, Row, Stored
from safeport.context_server.policy.content_secrets import SecretFinder
from safeport.context_server.workspace.walk import WalkedFile

SHARDS = 2
# The walk hands a writer its files in batches of about this much text (or this many rows),
# so a writer takes the interpreter lock once a batch; a few batches wait at most.
_BATCH_BYTES = 1 << 20
_BATCH_ROWS = 400
_QUEUE_DEPTH = 4

# ("write", local ids to delete, rows to insert), ("commit", [], []), ("merge", [], []) or
# ("stop", [], [])
_Op = tuple[str, list[int], list[Row]]


def shard_paths(path: Path) -> list[Path]:
    """The shard files: ``path`` itself first, then ``path.1`` and on, beside it."""
    return [path] + [path.with_name(f"{path.name}.{k}") for k in range(1, SHARDS)]


def shard_of(root: str, rel: str) -> int:
    key = f"{root}\0{rel}".encode("utf-8", "surrogateescape")
    return zlib.crc32(key) % SHARDS


def _global(local: int, shard: int) -> int:
    # Row ids are per shard; the rest of the index sees one id that names its shard too.
    return local * SHARDS + shard


def candidates(
    dbs: list[sqlite3.Connection], sql: str, params: list[object], after: int | None
) -> Iterator[tuple[int, str]]:
    """(id, path) of the rows ``sql`` selects in each shard (its first column a local row id,
    its second a path), each shard's after the id ``after``, merged into one id order."""

    def shard_rows(shard: int, db: sqlite3.Connection) -> Iterator[tuple[int, str]]:
        query, bound = sql, params
        if after is not None:
            # Local ids whose global id is above ``after`` (``_global`` is increasing in both).
            query += " AND fts.rowid > ?"
            bound = [*params, (after - shard) // SHARDS]
        for local, rel in db.execute(query + " ORDER BY fts.rowid", bound):
            yield _global(int(local), shard), str(rel)

    return heapq.merge(*(shard_rows(shard, db) for shard, db in enumerate(dbs)))


class Shards:
    """Open shards for one refresh: reads on the caller's thread, writes on one thread per
    shard. Reads first wait for the writes queued before them."""

    def __init__(self, path: Path) -> None:
        self.dbs = [store.connect(p) for p in shard_paths(path)]
        self._queues: list[queue.Queue[_Op]] = [queue.Queue(_QUEUE_DEPTH) for _ in self.dbs]
        # What the walk has decided for each shard and not yet handed to its writer.
        self._old: list[list[int]] = [[] for _ in self.dbs]
        self._new: list[list[Row]] = [[] for _ in self.dbs]
        self._bytes = [0 for _ in self.dbs]
        self._error: BaseException | None = None
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> Shards:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the writers and close; whatever was not committed is rolled back."""
        for shard, thread in enumerate(self._threads):
            self._queues[shard].put(("stop", [], []))
            thread.join()
        self._threads = []
        for db in self.dbs:
            db.close()

    # -- reading (after the writes queued so far) -----------------------------------------

    def create_schema(self) -> None:
        for db in self.dbs:
            store.create_schema(db)

    def counts(self) -> tuple[int, int]:
        """(files, bytes) over every shard."""
        self._drain()
        files = size = 0
        for db in self.dbs:
            row = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM files").fetchone()
            files, size = files + int(row[0]), size + int(row[1])
        return files, size

    def all_rows(self) -> dict[tuple[str, str], Stored]:
        self._drain()
        found: dict[tuple[str, str], Stored] = {}
        for shard, db in enumerate(self.dbs):
            for key, (local, size, mtime) in store.all_rows(db).items():
                found[key] = (_global(local, shard), size, mtime)
        return found

    def each_row(self) -> Iterator[tuple[tuple[str, str], int, int]]:
        """((root, relative path), size, mtime_ns) of every row, one at a time: a caller that
        yields to requests can do so between rows."""
        self._drain()
        for db in self.dbs:
            for root, rel, size, mtime in db.execute("SELECT root, rel, size, mtime_ns FROM files"):
                yield (str(root), str(rel)), int(size), int(mtime)

    def rows_under_each(self, entries: list[tuple[str, str]]) -> list[dict[str, Stored]]:
        """For each (root, relative path), its row and every row below it, as written once
        what was handed to the writers so far is written."""
        self._drain()
        every: list[dict[str, Stored]] = []
        for root, rel in entries:
            found: dict[str, Stored] = {}
            for shard, db in enumerate(self.dbs):
                for path, (local, size, mtime) in store.rows_under(db, root, rel).items():
                    found[path] = (_global(local, shard), size, mtime)
            every.append(found)
        return every

    # -- writing --------------------------------------------------------------------------

    def store(self, found: WalkedFile, stored: Stored | None, find: SecretFinder) -> Outcome:
        """``index_store.plan`` decides on this thread (``find``: what to withhold from the
        text); the shard's writer runs it."""
        outcome, text = store.plan(found, stored, find)
        if outcome == "kept":
            return outcome
        shard = shard_of(found.root.name, found.relative)
        local = 0  # a new row: the writer gives it the next id
        if stored is not None:
            assert stored[0] % SHARDS == shard, "a row outside its shard"
            self._old[shard].append(stored[0] // SHARDS)
            local = stored[0] // SHARDS  # a changed file keeps its place in the index's order
        if text is not None:
            self._new[shard].append(
                (local, found.root.name, found.relative, found.size, found.mtime_ns, text)
            )
            self._bytes[shard] += len(text)
            if self._bytes[shard] >= _BATCH_BYTES or len(self._new[shard]) >= _BATCH_ROWS:
                self._flush(shard)
        return outcome

    def delete(self, ids: list[int]) -> None:
        for i in ids:
            self._old[i % SHARDS].append(i // SHARDS)

    def commit(self) -> None:
        for shard in range(len(self.dbs)):
            self._flush(shard)
            self._put(shard, ("commit", [], []))
        self._drain()

    def _flush(self, shard: int) -> None:
        """Hand the shard's writer what the walk decided for it so far."""
        if self._old[shard] or self._new[shard]:
            self._put(shard, ("write", self._old[shard], self._new[shard]))
            self._old[shard], self._new[shard], self._bytes[shard] = [], [], 0

    def merge_segments(self) -> None:
        """Merge each shard's FTS5 segments into one, every shard at once (``store.merge``)."""
        for shard in range(len(self.dbs)):
            self._put(shard, ("merge", [], []))
        self._drain()

    def forget_removed(self) -> None:
        self._drain()
        for db in self.dbs:
            store.forget_removed(db)

    def _put(self, shard: int, op: _Op) -> None:
        self._raise_failed()
        if not self._threads:
            self._threads = [
                threading.Thread(target=self._write, args=(k,), daemon=True, name=f"index-{k}")
                for k in range(len(self.dbs))
            ]
            for thread in self._threads:
                thread.start()
        self._queues[shard].put(op)

    def _drain(self) -> None:
        for shard, q in enumerate(self._queues):
            self._flush(shard)
            q.join()
        self._raise_failed()

    def _raise_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def _write(self, shard: int) -> None:
        """One shard's writer: runs what it is given in order until told to stop. After a
        failure (of any shard) it only empties its queue."""
        db, ops = self.dbs[shard], self._queues[shard]
        while True:
            what, old, row = ops.get()
            try:
                if what == "stop":
                    return
                if self._error is None:
                    if what == "commit":
                        db.commit()
                    elif what == "merge":
                        store.merge(db)
                    else:
                        store.write(db, old, row)
            except BaseException as exc:  # raised again on the walk's thread
                self._error = exc
            finally:
                ops.task_done()
