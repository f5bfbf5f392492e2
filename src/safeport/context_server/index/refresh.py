"""What one refresh of the search index re-reads: everything, or only what changed.

What changed comes from folder events (``inotify_watch.py``) while every folder is watched, else
from the record of the last walk checked by ``stat`` (``walk_record.py``, ``catch_up.py``): a new
server process starts with that check, not a walk. Either way only the touched entries are
walked (each with what is below it), through the same walk code and the same per-file step as a
walk of everything, so the rows come out as a cold build would write them. Anything neither can
vouch for (a new policy, no record, a root moved, a hard link appearing, a refresh that failed)
makes the refresh walk everything.

The walk runs on the index's worker thread and stops at the next file when asked
(:class:`Stopped`): the index joins it before it closes the watch or the database it uses.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from safeport.context_server.index import sqlite_store as store
from safeport.context_server.index import walk_record
from safeport.context_server.index.catch_up import touched_since
from safeport.context_server.index.inotify_watch import FolderWatch, Touched, open_folder_watch
from safeport.context_server.index.requests_first import RequestGate
from safeport.context_server.index.shards import Shards
from safeport.context_server.index.sqlite_store import MAX_INDEXED_BYTES, Outcome, Stored
from safeport.context_server.index.walk_hooks import walk_hooks, watch_recorded
from safeport.context_server.index.walk_record import WalkRecord
from safeport.context_server.policy.display_names import UndisplayableName
from safeport.context_server.policy.read_policy import ReadPolicy, Refused
from safeport.context_server.workspace.descriptors import stat_entry
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from safeport.context_server.workspace.named_entries import disk_name
from safeport.context_server.workspace.walk import WalkedFile

# Even with a complete watch, everything is walked again this often: changes no folder event
# reports (a write through a shared mapping, a hard link made from outside) are caught here.
FULL_WALK_AFTER_S = 300.0
# A commit flushes FTS5's pending terms into a new segment that later merges rewrite: fewer,
# larger transactions are cheaper; a crash loses at most this many files' rows.
_COMMIT_EVERY = 10_000

# The walk looks at the stop flag and yields to requests this often (in files).
_PACE_EVERY = 64

Progress = Callable[[int, int], None]
Linked = set[tuple[str, tuple[str, ...]]]


class Stopped(Exception):
    """The index is closing: the walk stopped where it was (nothing is committed)."""


class Tally:
    """What one refresh did, counted as it goes."""

    def __init__(self) -> None:
        self.added = self.updated = self.removed = self.done = 0

    def count(self, outcome: Outcome) -> None:
        if outcome == "kept":
            return
        self.done += 1
        if outcome == "added":
            self.added += 1
        elif outcome == "updated":
            self.updated += 1
        elif outcome == "dropped":
            self.removed += 1


class Refresher:
    """The walk state between refreshes: the watch, and what the last walk of everything saw.
    Used under the index's refresh lock only."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        watch: bool,
        full_walk_after_s: float = FULL_WALK_AFTER_S,
        gate: RequestGate | None = None,
    ) -> None:
        self.workspace = workspace
        self.gate = gate or RequestGate()
        self.stop = threading.Event()
        # What the walk is doing now, for `get_health`.
        self.doing = "idle"
        self._record: WalkRecord | None = None
        self._want_watch = watch
        self._full_walk_after_s = full_walk_after_s
        self._watch: FolderWatch | None = None
        # The policy and time of the last walk of everything; events only say what changed
        # since then, and only under that policy.
        self._walked_policy: ReadPolicy | None = None
        self._walked_at = 0.0
        # Readable-looking files left out for their link count: when a link goes, they may
        # come in, and no event names them.
        self._linked: Linked = set()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def run(
        self, shards: Shards, progress: Progress | None, everything: bool
    ) -> tuple[Tally, bool]:
        """Refresh the rows in ``shards`` (not committed); the tally and whether it walked
        only what changed (False: everything was walked). The stored record is removed first
        and stored again by :meth:`save` once the rows are committed."""
        try:
            digest = walk_record.policy_digest(self.workspace)
            if self._record is None or self._record.digest != digest:
                self._record = walk_record.load(shards.dbs[0], digest)
            walk_record.clear(shards.dbs[0])
            tally = Tally()
            touched: Iterable[Touched] | None = None
            if not everything:
                touched = self._touched_since_last_walk()
                if touched is None:
                    touched = self._catch_up(shards)
            if touched is not None:
                self.doing = "walking what changed"
                if self._refresh_touched(shards, touched, tally):
                    return tally, True
            tally = Tally()
            self.doing = "walking everything"
            self._refresh_everything(shards, tally, progress)
            return tally, False
        except BaseException:
            self.failed()
            raise
        finally:
            self.doing = "idle"

    def failed(self) -> None:
        """After a refresh that failed, in its walk or in its writes (which the shards' writers
        may only report at the commit): the events drained are gone and the transaction is
        not, so only a walk of everything can say what the index should hold now."""
        self._walked_policy = None
        self._record = None

    def save(self, shards: Shards) -> None:
        """Store what the refresh just committed proves (for the next process's check)."""
        if self._record is not None:
            walk_record.save(shards.dbs[0], self._record)

    def _catch_up(self, shards: Shards) -> list[Touched] | None:
        """The entries changed since the recorded walk, by ``stat`` only; None: no record
        (or a root changed), walk everything."""
        record = self._record
        if record is None:
            return None
        self.doing = "checking what changed (stat only)"
        paced = self._paced()
        if self._watch is None and self._want_watch:
            self._watch = open_folder_watch()
        watch = watch_recorded(record, self.workspace, self._watch, paced)
        rows = []
        for count, row in enumerate(shards.each_row()):
            if count % 4096 == 0:
                next(paced)
            rows.append(row)
        touched = touched_since(record, self.workspace.roots, rows, paced)
        if touched is not None:
            self._walked_policy = self.workspace.policy
            self._linked = {(root, tuple(rel.split("/"))) for root, rel in record.linked}
            if watch is not None:
                watch.end_walk()  # the new folders too, as walked: now events will do
                self._walked_at = time.monotonic()
        return touched

    def _paced(self) -> Iterator[None]:
        """Advanced between pieces of work: stops when asked, else waits while requests run."""
        while True:
            if self.stop.is_set():
                raise Stopped
            self.gate.pause(self.stop)
            if self.stop.is_set():
                raise Stopped
            yield None

    @property
    def watching(self) -> bool:
        """Whether a refresh now would cost only what changed."""
        recent = time.monotonic() - self._walked_at < self._full_walk_after_s
        return self._watch is not None and self._watch.complete and recent

    def _touched_since_last_walk(self) -> tuple[Touched, ...] | None:
        """The entries to look at again, or None when only a walk of everything will do."""
        if self._watch is None or self._walked_policy is not self.workspace.policy:
            return None
        if time.monotonic() - self._walked_at > self._full_walk_after_s:
            return None
        drained = self._watch.drain()
        if not drained.complete:
            return None
        touched = list(drained.touched)
        if self._linked and any(t.gone for t in touched):
            # A link went: a file left out for its link count may be alone now.
            touched += [Touched(root, parts, False) for root, parts in self._linked]
        return tuple(touched)

    def _refresh_everything(self, shards: Shards, tally: Tally, progress: Progress | None) -> None:
        """Walk every root once; rows the walk did not see go."""
        if self._watch is None and self._want_watch:
            self._watch = open_folder_watch()
        watch = self._watch
        if watch is not None:
            watch.begin_walk()
        self._record = WalkRecord(walk_record.policy_digest(self.workspace))
        policy = self.workspace.policy
        rows = shards.all_rows()
        total = self._count_changed(rows) if progress is not None else 0
        linked: set[tuple[str, tuple[str, ...]]] = set()
        for root in self.workspace.roots:
            for rel in self._walk_and_store(shards, root, (), None, rows, tally, linked, watch):
                rows.pop((root.name, rel), None)
                if progress is not None and tally.done and tally.done % 200 == 0:
                    progress(tally.done, max(total, tally.done))
        stale = [row[0] for row in rows.values()]
        shards.delete(stale)
        tally.removed += len(stale)
        if progress is not None:
            progress(tally.done, max(total, tally.done))
        if watch is not None:
            watch.end_walk()
        self._linked = linked
        self._walked_policy = policy
        self._walked_at = time.monotonic()

    def _refresh_touched(self, shards: Shards, touched: Iterable[Touched], tally: Tally) -> bool:
        """Walk only the touched entries (each with what is below it); False if a hard link
        appeared, which only a walk of everything can place."""
        watch = self._watch
        entries = _outermost({(t.root, t.parts) for t in touched})
        by_name = {r.name: r for r in self.workspace.roots}
        for root_name, parts in entries:
            if watch is not None:
                watch.forget(root_name, parts)  # re-added by the walk below if still a folder
            if self._record is not None:
                self._record.forget_below(root_name, "/".join(parts))
        previous = self._linked
        kept = {e for e in previous if not any(_below(e, entry) for entry in entries)}
        linked: set[tuple[str, tuple[str, ...]]] = set()
        walks = [(by_name[r], parts) for r, parts in entries if r in by_name and parts]
        for root, parts in walks:
            if (root.name, parts) not in previous and self._hard_linked(root, parts):
                return False  # a new link to a file whose other names may be indexed
        # Every entry's rows are read before any is written: the entries hold no path in
        # common, so no entry's writes change another's rows, and the shard writers work
        # behind the walk instead of being waited for at every entry.
        rows_of = shards.rows_under_each([(root.name, "/".join(parts)) for root, parts in walks])
        for (root, parts), found in zip(walks, rows_of, strict=True):
            root_name = root.name
            rows = {(root_name, rel): row for rel, row in found.items()}
            walked = self._walk_and_store(
                shards, root, parts[:-1], parts[-1], rows, tally, linked, watch
            )
            for rel in walked:
                rows.pop((root_name, rel), None)
            stale = [row[0] for row in rows.values()]
            shards.delete(stale)
            tally.removed += len(stale)
        if linked - previous:
            return False  # a new hard link: the other names of that file may be indexed
        self._linked = kept | linked
        return True

    def _hard_linked(self, root: ServedRoot, parts: tuple[str, ...]) -> bool:
        """Whether the entry is a regular file with more than one link, whatever its name
        (the walk does not look at a file whose name it refuses)."""
        try:
            fd = self.workspace.descriptors.open_beneath(root, parts[:-1], final_dir=True)
        except Refused:
            return False
        try:
            st = stat_entry(fd, disk_name(fd, parts[-1]))
        except (OSError, UndisplayableName):
            return False
        finally:
            os.close(fd)
        return stat.S_ISREG(st.st_mode) and st.st_nlink > 1

    def _walk_and_store(
        self,
        shards: Shards,
        root: ServedRoot,
        start: tuple[str, ...],
        only: str | None,
        rows: dict[tuple[str, str], Stored],
        tally: Tally,
        linked: set[tuple[str, tuple[str, ...]]],
        watch: FolderWatch | None,
    ) -> Iterator[str]:
        """Walk (all of ``start``, or its entry ``only``) and store each file; yields the
        relative path of every file walked, so the caller can tell which rows are stale."""

        def wanted(found: WalkedFile) -> int | None:
            current = store.unchanged(found, rows.get((root.name, found.relative)))
            return None if current else MAX_INDEXED_BYTES + 1

        paced = self._paced()
        opened, left_out, link = walk_hooks(
            self._record, watch, root.name, (start, only), linked, paced
        )
        record = self._record
        find = self.workspace.secrets.finder(root.path)
        for count, item in enumerate(
            self.workspace.walk(
                root,
                start,
                max_bytes=MAX_INDEXED_BYTES,
                scoped=False,
                head_for=wanted,
                opened=opened,
                only=only,
                linked=link,
                refused=left_out,
            )
        ):
            if count % _PACE_EVERY == 0:
                next(paced)
            if not isinstance(item, WalkedFile):
                continue
            outcome = shards.store(item, rows.get((root.name, item.relative)), find)
            tally.count(outcome)
            if record is not None and outcome in ("skipped", "dropped"):
                record.unstored[(root.name, item.relative)] = (item.size, item.mtime_ns)
            if tally.done and tally.done % _COMMIT_EVERY == 0:
                shards.commit()
            yield item.relative

    def _count_changed(self, rows: dict[tuple[str, str], Stored]) -> int:
        """How many files a walk will re-read (a progress bar's total; one more walk)."""
        return sum(
            1
            for root in self.workspace.roots
            for found in self.workspace.walk_files(root, max_bytes=MAX_INDEXED_BYTES, scoped=False)
            if not store.unchanged(found, rows.get((root.name, found.relative)))
        )


def _below(entry: tuple[str, tuple[str, ...]], top: tuple[str, tuple[str, ...]]) -> bool:
    return entry[0] == top[0] and entry[1][: len(top[1])] == top[1]


def _outermost(entries: set[tuple[str, tuple[str, ...]]]) -> list[tuple[str, tuple[str, ...]]]:
    """The entries not below another one (its walk covers them), in path order."""
    kept = []
    for root, parts in sorted(entries):
        if not any((root, parts[:i]) in entries for i in range(len(parts))):
            kept.append((root, parts))
    return kept
