"""The content search index: SQLite FTS5 with the trigram tokenizer, under the cache folder.

The index is only a way to find candidates fast. It holds the text of files the walker found
readable when it ran; whatever it returns is re-checked against the current policy and re-read
from disk before a line or snippet is served, so a file that became private, moved behind a
link or changed since indexing never leaks through a stale entry. The database lives in
safeport's cache folder, never in the workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from safeport.context_server.policy import looks_binary
from safeport.context_server.walk import WalkedFile
from safeport.context_server.workspace import ServedRoot, Workspace
from safeport.errors import EnvironmentProblem
from safeport.shared.paths import ensure_private_dir

log = logging.getLogger(__name__)

MAX_INDEXED_BYTES = 1024 * 1024
REFRESH_AFTER_S = 30.0
RETRY_AFTER_S = 5.0
_SCHEMA_VERSION = 1

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IndexStats:
    files: int
    bytes: int
    added: int
    updated: int
    removed: int
    seconds: float


@dataclass(frozen=True)
class Candidate:
    root: str
    rel: str


def index_path(cache_dir: Path, workspace: Workspace) -> Path:
    """One database per set of roots, named by a digest so no path appears in the name."""
    key = "\0".join(sorted(str(r.path) for r in workspace.roots))
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return cache_dir / "context" / f"index-{digest}.sqlite"


class SearchIndex:
    """Build, refresh and query the trigram index; safe to use from several threads."""

    def __init__(self, path: Path, workspace: Workspace) -> None:
        self.path = path
        self.workspace = workspace
        self._local = threading.local()
        self._refresh_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.last_refresh: float | None = None
        self.last_stats: IndexStats | None = None
        self.last_error: str | None = None
        self._failed_at = 0.0
        ensure_private_dir(path.parent)
        with contextlib.closing(self._connect()) as db:
            self._create(db)
            if self._file_count(db) > 0:
                self.last_refresh = path.stat().st_mtime

    # -- state --------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self._worker is not None and self._worker.is_alive():
            return "building" if self.last_refresh is None else "refreshing"
        return "ready" if self.last_refresh is not None else "empty"

    @property
    def ready(self) -> bool:
        return self.last_refresh is not None

    def counts(self) -> dict[str, int]:
        db = self._db()
        row = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM files").fetchone()
        return {"files": int(row[0]), "bytes": int(row[1])}

    # -- building -----------------------------------------------------------------------------

    def refresh(self, progress: Progress | None = None) -> IndexStats:
        """Bring the index in line with the workspace; only changed files are re-read.

        Two walks, each O(files) in time and holding no per-file state but the ids of the rows
        still current: the first counts the changed files (for progress), the second reads them
        through the walk's own folder descriptors and stores them; rows no walk saw go."""
        with self._refresh_lock, contextlib.closing(self._connect()) as db:
            started = time.monotonic()
            total = sum(
                1
                for root in self.workspace.roots
                for found in self._walk(root)
                if _changed(found, _stored(db, found)) is not None
            )
            seen: set[int] = set()
            added = updated = done = 0
            stored: tuple[int, int, int] | None = None

            def wanted(found: WalkedFile) -> int | None:
                nonlocal stored
                stored = _stored(db, found)
                return MAX_INDEXED_BYTES + 1 if _changed(found, stored) is not None else None

            for root in self.workspace.roots:
                for found in self._walk(root, wanted):
                    if found.head is None:
                        if stored is not None and _changed(found, stored) is None:
                            seen.add(stored[0])
                        continue
                    if stored is not None:
                        db.execute("DELETE FROM fts WHERE rowid = ?", (stored[0],))
                        db.execute("DELETE FROM files WHERE id = ?", (stored[0],))
                        updated += 1
                    else:
                        added += 1
                    text = _text_of(found.head)
                    if text is not None:
                        cur = db.execute(
                            "INSERT OR REPLACE INTO files(root, rel, size, mtime_ns) "
                            "VALUES (?, ?, ?, ?)",
                            (root.name, found.relative, found.size, found.mtime_ns),
                        )
                        assert cur.lastrowid is not None
                        seen.add(cur.lastrowid)
                        db.execute(
                            "INSERT INTO fts(rowid, body) VALUES (?, ?)", (cur.lastrowid, text)
                        )
                    done += 1
                    if progress is not None and (done % 200 == 0 or done == total):
                        progress(done, max(total, done))
                    if done % 2000 == 0:
                        db.commit()
            removed = self._remove_unseen(db, seen)
            db.commit()
            count, size = db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM files"
            ).fetchone()
            if progress is not None and not done:
                progress(0, 0)
            self.last_refresh = time.time()
            self.last_error = None
            self.last_stats = IndexStats(
                int(count), int(size), added, updated, removed, time.monotonic() - started
            )
            return self.last_stats

    def _walk(
        self, root: ServedRoot, head_for: Callable[[WalkedFile], int | None] | None = None
    ) -> Iterator[WalkedFile]:
        for item in self.workspace.walk(
            root, max_bytes=MAX_INDEXED_BYTES, scoped=False, head_for=head_for
        ):
            if isinstance(item, WalkedFile):
                yield item

    def _remove_unseen(self, db: sqlite3.Connection, seen: set[int]) -> int:
        stale = [fid for (fid,) in db.execute("SELECT id FROM files") if fid not in seen]
        for start in range(0, len(stale), 500):
            chunk = stale[start : start + 500]
            marks = ",".join("?" * len(chunk))
            db.execute(f"DELETE FROM fts WHERE rowid IN ({marks})", chunk)  # noqa: S608
            db.execute(f"DELETE FROM files WHERE id IN ({marks})", chunk)  # noqa: S608
        return len(stale)

    def refresh_in_background(self, *, force: bool = False) -> None:
        """Start a refresh on a worker thread if none runs and the index is old enough; after
        a failed refresh, the next call tries again (at most every few seconds)."""
        if self._worker is not None and self._worker.is_alive():
            return
        now = time.time()
        if not force:
            if self.last_error is not None:
                if now - self._failed_at < RETRY_AFTER_S:
                    return
            elif self.last_refresh is not None and now - self.last_refresh < REFRESH_AFTER_S:
                return
        self._worker = threading.Thread(target=self._refresh_quietly, daemon=True, name="index")
        self._worker.start()

    def wait(self, timeout: float) -> None:
        worker = self._worker
        if worker is not None:
            worker.join(timeout)

    def _refresh_quietly(self) -> None:
        try:
            self.refresh()
        except Exception as exc:  # the worker must report, never die silently
            # Reported by category only: an OS message could carry a path.
            self.last_error = f"the last index refresh failed ({type(exc).__name__}); retrying"
            self._failed_at = time.time()
            log.warning("index refresh failed: %s", type(exc).__name__)

    # -- querying -----------------------------------------------------------------------------

    def candidates(self, query: str, root: str, prefix: str, after: str) -> Iterator[Candidate]:
        """Files whose text may contain ``query``, in path order, after the path ``after``."""
        phrase = trigram_query(query)
        # The MATCH runs once as a subquery; joined directly, SQLite may probe it per file row.
        sql = (
            "SELECT f.root, f.rel FROM files f "
            "WHERE f.id IN (SELECT rowid FROM fts WHERE fts MATCH ?) AND f.root = ?"
        )
        params: list[object] = [phrase, root]
        if prefix:
            sql += " AND substr(f.rel, 1, ?) = ?"
            params += [len(prefix) + 1, prefix + "/"]
        if after:
            sql += " AND f.rel > ?"
            params.append(after)
        sql += " ORDER BY f.rel"
        try:
            for r, rel in self._db().execute(sql, params):
                yield Candidate(r, rel)
        except sqlite3.Error as exc:
            raise EnvironmentProblem(f"search index error ({type(exc).__name__})") from None

    # -- sqlite -------------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._connect()
            self._local.db = db
        return db

    def _connect(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise EnvironmentProblem(
                f"cannot open the search index ({type(exc).__name__})",
                hint="remove the index file under the cache folder and run `sp context index`",
            ) from None
        return db

    def _create(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, _SCHEMA_VERSION):
            db.execute("DROP TABLE IF EXISTS files")
            db.execute("DROP TABLE IF EXISTS fts")
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, root TEXT NOT NULL, "
            "rel TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
            "UNIQUE(root, rel))"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(body, tokenize='trigram', "
            "detail='none')"
        )
        db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        db.commit()

    def _file_count(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT count(*) FROM files").fetchone()[0])


def _stored(db: sqlite3.Connection, found: WalkedFile) -> tuple[int, int, int] | None:
    row = db.execute(
        "SELECT id, size, mtime_ns FROM files WHERE root = ? AND rel = ?",
        (found.root.name, found.relative),
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), int(row[2]))


def _changed(found: WalkedFile, stored: tuple[int, int, int] | None) -> WalkedFile | None:
    """The file if the index does not hold it as it is now."""
    if stored is not None and stored[1:] == (found.size, found.mtime_ns):
        return None
    return found


def _text_of(head: bytes) -> str | None:
    """The text to index, or None for a file too large or binary to be worth it."""
    if len(head) > MAX_INDEXED_BYTES or looks_binary(head):
        return None
    return head.decode("utf-8", "replace")


def trigram_query(query: str, most: int = 24) -> str:
    """An FTS5 query ANDing the query's trigrams.

    The table keeps no positions (``detail='none'``, a third of the size), so a phrase cannot be
    asked for; the trigrams narrow the candidates and the caller confirms each by reading it.
    """
    grams = list(dict.fromkeys(query[i : i + 3] for i in range(len(query) - 2)))
    if len(grams) > most:  # spread the sample over the whole query
        step = len(grams) / most
        grams = [grams[int(i * step)] for i in range(most)] + [grams[-1]]
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)
