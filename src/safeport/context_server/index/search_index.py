"""The content search index: SQLite FTS5 with the trigram tokenizer, under the cache folder.

The index is only a way to find candidates fast. It holds the text of files the walker found
readable when it ran; whatever it returns is re-checked against the current policy and re-read
from disk before a line or snippet is served, so a file that became private, moved behind a
link or changed since indexing never leaks through a stale entry. The database lives in
safeport's cache folder, never in the workspace.
What one refresh re-reads (everything, or what folder events name) is ``index_refresh.py``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from safeport.context_server.index import sqlite_store as store
from safeport.context_server.index.refresh import FULL_WALK_AFTER_S, Progress, Refresher, Stopped
from safeport.context_server.index.requests_first import RequestGate
from safeport.context_server.index.shards import Shards, candidates, shard_paths
from safeport.context_server.index.sqlite_module import CONTENTLESS_DELETE, sqlite3
from safeport.context_server.workspace.gate import Workspace
from safeport.errors import EnvironmentProblem
from safeport.shared.paths import ensure_private_dir

log = logging.getLogger(__name__)

REFRESH_AFTER_S = 30.0
# With every folder watched a refresh costs what changed, so it may run far more often.
WATCHED_REFRESH_AFTER_S = 1.0
RETRY_AFTER_S = 5.0
# How long closing waits for the walk to stop (it stops at its next file or folder).
STOP_WAIT_S = 30.0
# A refresh that wrote at least this many rows, and a quarter of the index, merges its segments.
MERGE_FROM_ROWS = 2000
# An index's name without its rules part: the files of one set of roots under any rules.
_FAMILY = re.compile(r"index-[0-9a-f]{20}")
_OFF = re.compile(r"index-[0-9a-f]{20}-off-")

__all__ = ["Candidate", "IndexStats", "Progress", "SearchIndex", "index_path", "trigram_query"]


@dataclass(frozen=True)
class IndexStats:
    files: int
    bytes: int
    added: int
    updated: int
    removed: int
    seconds: float
    walked_everything: bool = True


@dataclass(frozen=True)
class Candidate:
    """A file the index says may hold a query, and its place in the index's order (the
    position a search resumes after)."""

    root: str
    rel: str
    position: int


def index_path(cache_dir: Path, workspace: Workspace) -> Path:
    """One database per set of roots, named by a digest so no path appears in the name; and
    per set of secret rules (``ContentSecrets.rules_digest``), as the index holds text withheld
    under them: other rules (a value allowed back, a root's redaction turned on again) get
    another index, never rows held under these. A table that keeps no text has a name of its
    own (``-trigrams``): an SQLite too old to read it never opens it, it drops it as another
    family member and builds its own (``sqlite_module.py``)."""
    key = "\0".join(sorted(str(r.path) for r in workspace.roots))
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    rules = workspace.secrets.rules_digest()
    off = "off-" if workspace.secrets.unredacted_roots else ""
    kind = "-trigrams" if CONTENTLESS_DELETE else ""
    name = f"index-{digest}-{off}{rules[:16]}" if rules else f"index-{digest}"
    return cache_dir / "context" / f"{name}{kind}.sqlite"


def drop_other_rules(path: Path, *, none_off: bool) -> None:
    """Remove the indexes of the same roots kept under other secret rules, and (``none_off``:
    no root's redaction is off any more) every index built while one was: such an index holds
    that root's secrets as written, and must not outlive the switch."""
    family = _FAMILY.match(path.name)
    if family is None:
        return  # not a name index_path gives
    for entry in path.parent.iterdir():
        if entry.name.startswith(path.name):
            continue
        if entry.name.startswith(family.group()) or (none_off and _OFF.match(entry.name)):
            entry.unlink(missing_ok=True)


class SearchIndex:
    """Build, refresh and query the trigram index; safe to use from several threads."""

    def __init__(
        self,
        path: Path,
        workspace: Workspace,
        *,
        watch: bool = True,
        retry_after_s: float = RETRY_AFTER_S,
        full_walk_after_s: float = FULL_WALK_AFTER_S,
    ) -> None:
        """``retry_after_s``: how soon a search may start another refresh after one failed;
        ``full_walk_after_s``: how often everything is walked even with a complete watch."""
        self.path = path
        self._retry_after_s = retry_after_s
        self.workspace = workspace
        self._local = threading.local()
        self._refresh_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self.last_refresh: float | None = None
        self.last_stats: IndexStats | None = None
        self.last_error: str | None = None
        self._failed_at = 0.0
        self.requests = RequestGate()
        self._refresher = Refresher(
            workspace, watch=watch, full_walk_after_s=full_walk_after_s, gate=self.requests
        )
        # Set once the first refresh of this process ended (the start-up check): until then a
        # row may speak for a file changed while no server ran.
        self._caught_up = threading.Event()
        ensure_private_dir(path.parent)
        drop_other_rules(path, none_off=not workspace.secrets.off_anywhere)
        with Shards(path) as shards:
            shards.create_schema()
            if shards.counts()[0] > 0:
                self.last_refresh = path.stat().st_mtime

    def close(self) -> None:
        """Stop the walk and wait for it, then close the watch it uses: the worker is the
        only user of the watch's descriptor while it runs, so it must be gone first."""
        self._refresher.stop.set()
        worker = self._worker
        if worker is not None:
            worker.join(STOP_WAIT_S)
            if worker.is_alive():  # stuck in a system call: leave what it holds open
                log.warning("index walk did not stop; its folder watch is left open")
                return
        with self._refresh_lock:
            self._refresher.close()

    def caught_up(self, timeout: float) -> bool:
        """Whether the start-up check has ended (waiting up to ``timeout``, without holding
        up the walk as a request would): until then only a scan is sure to see every file."""
        if self._caught_up.is_set():
            return True
        with self.requests.waiting():
            return self._caught_up.wait(timeout)

    # -- state --------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self._worker is not None and self._worker.is_alive():
            return "building" if self.last_refresh is None else "refreshing"
        return "ready" if self.last_refresh is not None else "empty"

    @property
    def ready(self) -> bool:
        return self.last_refresh is not None

    @property
    def walk(self) -> str:
        """What the index's walk is doing now (``get_health``)."""
        if self.requests.yielding:
            return "yielding to requests"
        return self._refresher.doing

    def counts(self) -> dict[str, int]:
        files = size = 0
        for db in self._dbs():
            row = db.execute("SELECT count(*), coalesce(sum(size), 0) FROM files").fetchone()
            files, size = files + int(row[0]), size + int(row[1])
        return {"files": files, "bytes": size}

    # -- building -----------------------------------------------------------------------------

    def refresh(self, progress: Progress | None = None, *, everything: bool = False) -> IndexStats:
        """Bring the index in line with the workspace; only changed files are re-read.

        Walks only what the folder watch reports as touched when it can vouch for the rest,
        else everything (``everything`` forces that)."""
        with self._refresh_lock, Shards(self.path) as shards:
            started = time.monotonic()
            tally, by_events = self._refresher.run(shards, progress, everything)
            try:
                shards.commit()
                self._refresher.save(shards)
            except BaseException:
                self._refresher.failed()
                raise
            count, size = shards.counts()
            if tally.added + tally.updated >= max(MERGE_FROM_ROWS, count // 4):
                # Most of the index was just written (a build): its segments merged now, the
                # refreshes after it write into one rather than merging a build's worth.
                shards.merge_segments()
            if tally.updated or tally.removed or tally.added >= MERGE_FROM_ROWS:
                shards.forget_removed()  # also empties the log the merge filled
            self.last_refresh = time.time()
            self.last_error = None
            self.last_stats = IndexStats(
                int(count),
                int(size),
                tally.added,
                tally.updated,
                tally.removed,
                time.monotonic() - started,
                walked_everything=not by_events,
            )
            self._caught_up.set()
            return self.last_stats

    def refresh_in_background(self, *, force: bool = False) -> None:
        """Start a refresh on a worker thread if none runs and the index is old enough; after
        a failed refresh, the next call tries again (at most every few seconds)."""
        if (self._worker is not None and self._worker.is_alive()) or self._refresher.stop.is_set():
            return
        now = time.time()
        if not force:
            if self.last_error is not None:
                if now - self._failed_at < self._retry_after_s:
                    return
            # The first refresh of a process is its start-up check, whatever the index's age.
            elif (
                self._caught_up.is_set()
                and self.last_refresh is not None
                and now - self.last_refresh < self._refresh_after()
            ):
                return
        self._worker = threading.Thread(target=self._refresh_quietly, daemon=True, name="index")
        self._worker.start()

    def _refresh_after(self) -> float:
        """How old the index may get before a search starts a refresh: short while a walk
        of everything is recent and every folder is watched (a refresh then costs what
        changed), else long."""
        return WATCHED_REFRESH_AFTER_S if self._refresher.watching else REFRESH_AFTER_S

    def wait(self, timeout: float) -> None:
        worker = self._worker
        if worker is not None:
            worker.join(timeout)

    def _refresh_quietly(self) -> None:
        try:
            self.refresh()
        except Stopped:
            return  # closing: nothing to report
        except Exception as exc:  # the worker must report, never die silently
            # Reported by category only: an OS message could carry a path.
            self.last_error = f"the last index refresh failed ({type(exc).__name__}); retrying"
            self._failed_at = time.time()
            log.warning("index refresh failed: %s", type(exc).__name__)

    # -- querying -----------------------------------------------------------------------------

    def candidates(
        self, query: str, root: str, prefix: str, after: int | None
    ) -> Iterator[Candidate]:
        """Files whose text may contain ``query``, in the index's own order (its row ids),
        after the position ``after`` (every shard asked, their answers merged).

        The order is the index's rather than the paths': FTS5 gives a match's rows in row id
        order as it finds them, so the first page of a query found in 50,000 files costs the
        rows it reads, not all 50,000 read and sorted by path before the first candidate."""
        phrase = trigram_query(query)
        # The match drives (CROSS JOIN keeps it outer) and each row's path is looked up by its
        # id: no temporary table, no sort, and the statement stops where its reader stops.
        sql = (
            "SELECT fts.rowid, f.rel FROM fts CROSS JOIN files f ON f.id = fts.rowid "
            "WHERE fts MATCH ? AND f.root = ?"
        )
        params: list[object] = [phrase, root]
        if prefix:
            sql += " AND substr(f.rel, 1, ?) = ?"
            params += [len(prefix) + 1, prefix + "/"]
        try:
            for position, rel in candidates(self._dbs(), sql, params, after):
                yield Candidate(root, rel, position)
        except sqlite3.Error as exc:
            raise EnvironmentProblem(f"search index error ({type(exc).__name__})") from None

    # -- sqlite -------------------------------------------------------------------------------

    def _dbs(self) -> list[sqlite3.Connection]:
        """This thread's connections, one per shard."""
        dbs: list[sqlite3.Connection] | None = getattr(self._local, "dbs", None)
        if dbs is None:
            dbs = [store.connect(p) for p in shard_paths(self.path)]
            self._local.dbs = dbs
        return dbs


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
