"""Refreshing the index by folder events: afterwards it holds exactly what a cold build holds.

Each test changes a real tree under a real inotify watch, refreshes, and compares every row
(root, path, size, mtime and the trigrams its text left) with a cold build of the same tree
into a fresh database. Whatever the events cannot vouch for must make the refresh walk
everything.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from safeport.context_server.index import sqlite_store as index_store
from safeport.context_server.index.inotify_watch import FolderWatch, open_folder_watch
from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.index.shards import SHARDS, shard_of, shard_paths
from safeport.context_server.index.sqlite_module import sqlite3
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="folder events are inotify (Linux)"
)

CANARY = "CANARY-index-9f3a71c2e5"
Rows = list[tuple[str, str, int, int, frozenset[str]]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for folder in ("src/app", "src/lib/deep", "docs", "secrets", "node_modules/pkg"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "app" / "main.py").write_text("def main():\n    return 1\n")
    (root / "src" / "app" / "util.py").write_text("def util():\n    return 2\n")
    (root / "src" / "lib" / "deep" / "core.py").write_text("CORE = 3\n")
    (root / "docs" / "guide.md").write_text("# guide\nzebra\n")
    (root / "secrets" / "token.txt").write_text(f"{CANARY}-in-secrets\n")
    (root / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    (root / "README.md").write_text("readme\n")
    return root


@pytest.fixture
def indexed(tree: Path, tmp_path: Path) -> Iterator[SearchIndex]:
    workspace = Workspace([ServedRoot("ws", tree)], ReadPolicy())
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace)
    first = index.refresh()
    assert first.walked_everything and first.files == 5
    yield index
    index.close()
    workspace.close()


def rows(path: Path) -> Rows:
    """Every row of every shard with the trigrams its text left in the index, each row checked
    to be in the shard its path names."""
    found = []
    for shard, shard_path in enumerate(shard_paths(path)):
        with contextlib.closing(sqlite3.connect(shard_path)) as db:
            # What the index holds of each row's text, whether its table keeps the text or not.
            db.execute("CREATE VIRTUAL TABLE temp.held USING fts5vocab(main, fts, 'instance')")
            grams: dict[int, set[str]] = {}
            for doc, term in db.execute("SELECT doc, term FROM temp.held"):
                grams.setdefault(int(doc), set()).add(str(term))
            here = db.execute("SELECT f.id, f.root, f.rel, f.size, f.mtime_ns FROM files f")
            found_here = [
                (r, rel, int(s), int(m), frozenset(grams.pop(int(i), set())))
                for i, r, rel, s, m in here
            ]
        assert not grams  # no indexed text outlives its row
        assert all(shard_of(r, rel) == shard for r, rel, *_ in found_here)
        found += found_here
    return sorted(found)


def cold_build(index: SearchIndex, tmp_path: Path) -> Rows:
    workspace = Workspace(index.workspace.roots, index.workspace.policy)
    fresh = SearchIndex(tmp_path / "cold" / "index.sqlite", workspace, watch=False)
    try:
        fresh.refresh()
    finally:
        workspace.close()
    return rows(fresh.path)


def refreshed_by_events(index: SearchIndex) -> Rows:
    stats = index.refresh()
    assert not stats.walked_everything, "expected a refresh by folder events"
    return rows(index.path)


def _touch(root: Path, _out: Path) -> None:
    os.utime(root / "docs" / "guide.md", ns=(1, 2))


def _modify(root: Path, _out: Path) -> None:
    (root / "src" / "app" / "main.py").write_text("def main():\n    pass\n")


def _add_file(root: Path, _out: Path) -> None:
    (root / "src" / "new.py").write_text("NEW = 1\n")


def _add_folder_with_files(root: Path, _out: Path) -> None:
    _add_folder(root / "src" / "fresh")


def _delete_file(root: Path, _out: Path) -> None:
    (root / "src" / "app" / "util.py").unlink()


def _delete_folder(root: Path, _out: Path) -> None:
    _remove_tree(root / "src" / "lib")


def _rename_file(root: Path, _out: Path) -> None:
    (root / "README.md").rename(root / "READ.md")


def _rename_folder(root: Path, _out: Path) -> None:
    (root / "src" / "lib").rename(root / "src" / "library")


def _move_folder_up(root: Path, _out: Path) -> None:
    (root / "src" / "lib" / "deep").rename(root / "deep")


def _move_folder_out(root: Path, out: Path) -> None:
    (root / "src" / "app").rename(out / "app")


def _move_folder_in(root: Path, out: Path) -> None:
    _add_folder(out / "incoming")
    (out / "incoming").rename(root / "docs" / "incoming")


def _replace_file_by_link(root: Path, _out: Path) -> None:
    (root / "docs" / "guide.md").unlink()
    (root / "docs" / "guide.md").symlink_to("../src/app/main.py")


def _make_file_binary(root: Path, _out: Path) -> None:
    (root / "src" / "app" / "main.py").write_bytes(b"\0\1")


def _rename_over_file(root: Path, _out: Path) -> None:
    os.replace(root / "src" / "app" / "util.py", root / "src" / "app" / "main.py")


def _file_into_ignored_folder(root: Path, _out: Path) -> None:
    (root / "README.md").rename(root / "node_modules" / "README.md")


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    change.__name__.strip("_").replace("_", " "): change
    for change in (
        _touch,
        _modify,
        _add_file,
        _add_folder_with_files,
        _delete_file,
        _delete_folder,
        _rename_file,
        _rename_folder,
        _move_folder_up,
        _move_folder_out,
        _move_folder_in,
        _replace_file_by_link,
        _make_file_binary,
        _rename_over_file,
        _file_into_ignored_folder,
    )
}


def _add_folder(folder: Path) -> None:
    (folder / "sub").mkdir(parents=True)
    (folder / "a.py").write_text("A = 1\n")
    (folder / "sub" / "b.md").write_text("b\n")


def _remove_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), key=lambda p: -len(p.parts)):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_refresh_by_events_holds_what_a_cold_build_holds(
    change: str, indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    before = rows(indexed.path)
    outside = tmp_path / "outside"
    outside.mkdir()
    CHANGES[change](tree, outside)
    after = refreshed_by_events(indexed)
    assert after == cold_build(indexed, tmp_path)
    assert after != before  # the change was one the index had to see


def test_many_changes_in_one_refresh_hold_what_a_cold_build_holds(
    indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for change in sorted(CHANGES):
        with contextlib.suppress(OSError):  # some undo what an earlier one needs
            CHANGES[change](tree, outside)
    assert refreshed_by_events(indexed) == cold_build(indexed, tmp_path)


def test_a_refresh_with_nothing_changed_walks_nothing(indexed: SearchIndex) -> None:
    before = rows(indexed.path)
    stats = indexed.refresh()
    assert not stats.walked_everything and stats.added == stats.updated == stats.removed == 0
    assert rows(indexed.path) == before


@pytest.mark.parametrize(
    "make_private",
    [
        lambda root: (root / "docs" / "guide.md").rename(root / "docs" / ".env"),
        lambda root: (root / "docs" / "guide.md").rename(root / "secrets" / "guide.md"),
        lambda root: (root / "docs").rename(root / "secret"),
        lambda root: (root / "docs").rename(root / ".ssh"),
    ],
    ids=["renamed to .env", "moved into secrets/", "folder renamed secret", "folder to .ssh"],
)
def test_a_file_that_becomes_private_leaves_the_index_and_its_text_the_database(
    make_private: Callable[[Path], object], indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    guide = tree / "docs" / "guide.md"
    guide.write_text(f"# guide\n{CANARY}\n")
    refreshed_by_events(indexed)
    assert [c.rel for c in indexed.candidates(CANARY, "ws", "", None)] == ["docs/guide.md"]
    make_private(tree)
    after = refreshed_by_events(indexed)
    assert after == cold_build(indexed, tmp_path)
    assert list(indexed.candidates(CANARY, "ws", "", None)) == []
    # Not one trigram of the canary's own (its hex digits) is left in any row.
    hex_part = CANARY.rsplit("-", 1)[1]
    own = {hex_part[i : i + 3] for i in range(len(hex_part) - 2)}
    assert all(own.isdisjoint(grams) for *_, grams in after)
    for path in indexed.path.parent.iterdir():  # the database, its WAL and shared memory
        assert CANARY.encode() not in path.read_bytes(), path.name


def walks_everything_and_leaves_out(index: SearchIndex, tmp_path: Path, rel: str) -> None:
    assert index.refresh().walked_everything
    assert rel not in [indexed for _root, indexed, *_ in rows(index.path)]
    assert rows(index.path) == cold_build(index, tmp_path)


def test_a_new_policy_makes_the_next_refresh_walk_everything(
    indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    indexed.workspace.policy = ReadPolicy().tightened(patterns=["guide.*"])
    walks_everything_and_leaves_out(indexed, tmp_path, "docs/guide.md")


def test_a_new_hard_link_makes_the_refresh_walk_everything(
    indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    os.link(tree / "src" / "app" / "main.py", tree / "docs" / "main-link.py")
    # main.py has two links now, and no event in its folder says so.
    walks_everything_and_leaves_out(indexed, tmp_path, "src/app/main.py")


def test_a_hard_link_removed_brings_its_twin_back_by_events(
    indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    os.link(tree / "src" / "app" / "main.py", tree / "docs" / "twin.bin")
    assert indexed.refresh().walked_everything
    (tree / "docs" / "twin.bin").unlink()  # a name the walk never reads: main.py is alone
    after = refreshed_by_events(indexed)
    assert "src/app/main.py" in [rel for _r, rel, *_ in after]
    assert after == cold_build(indexed, tmp_path)


def test_the_periodic_check_catches_a_link_made_from_outside_the_tree(
    indexed: SearchIndex, tree: Path, tmp_path: Path
) -> None:
    assert not indexed.refresh().walked_everything  # the default period: events suffice
    workspace = Workspace([ServedRoot("ws", tree)], ReadPolicy())
    index = SearchIndex(tmp_path / "cache" / "walking.sqlite", workspace, full_walk_after_s=0.0)
    try:
        assert index.refresh().walked_everything
        # No folder of the tree changes, so no event: the period's check sees the link count.
        os.link(tree / "src" / "app" / "main.py", tmp_path / "outside-link.py")
        index.refresh()
        assert "src/app/main.py" not in [rel for _r, rel, *_ in rows(index.path)]
        assert rows(index.path) == cold_build(index, tmp_path)
    finally:
        index.close()
        workspace.close()


def test_a_refresh_that_fails_midway_leaves_the_next_one_walking_everything(
    indexed: SearchIndex, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "src" / "app" / "main.py").write_text("changed = True\n")

    def broken(*_args: object, **_options: object) -> str:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(index_store, "plan", broken)
        with pytest.raises(sqlite3.OperationalError):
            indexed.refresh()
    assert indexed.refresh().walked_everything
    assert rows(indexed.path) == cold_build(indexed, tmp_path)


def test_without_a_watch_a_refresh_checks_by_stat_and_reads_what_changed(
    tree: Path, tmp_path: Path
) -> None:
    workspace = Workspace([ServedRoot("ws", tree)], ReadPolicy())
    index = SearchIndex(tmp_path / "plain" / "index.sqlite", workspace, watch=False)
    assert index.refresh().walked_everything
    (tree / "src" / "app" / "main.py").write_text(f"def main():\n    return '{CANARY}'\n")
    (tree / "docs" / "new.md").write_text("new\n")
    again = index.refresh()
    assert not again.walked_everything and (again.added, again.updated) == (1, 1)
    assert rows(index.path) == cold_build(index, tmp_path)
    workspace.close()


# -- the watch itself -------------------------------------------------------------------------

_EVENT = struct.Struct("iIII")


@pytest.fixture
def fed() -> Iterator[tuple[FolderWatch, int]]:
    """A FolderWatch of the root and src/, reading synthetic events from a pipe in the
    kernel's wire format; the pipe's write end to feed it."""
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    added: list[int] = []

    def add(_fd: int, _path: bytes, _mask: int) -> int:
        added.append(len(added) + 1)
        return added[-1]

    watch = FolderWatch(read_end, add, lambda _fd, _wd: None)  # type: ignore[arg-type]
    watch.begin_walk()
    watch.watch("ws", (), 3)
    watch.watch("ws", ("src",), 4)
    watch.end_walk()
    yield watch, write_end
    os.close(write_end)
    watch.close()


def event(wd: int, mask: int, name: bytes = b"") -> bytes:
    padded = name + b"\0" * (-len(name) % 16) if name else b""
    return _EVENT.pack(wd, mask, 0, len(padded)) + padded


def test_an_overflowed_event_queue_says_the_events_are_not_all(
    fed: tuple[FolderWatch, int],
) -> None:
    watch, feed = fed
    os.write(feed, event(2, 0x100, b"new.py") + event(-1, 0x4000))
    drained = watch.drain()
    assert not drained.complete
    assert [t.parts for t in drained.touched] == [("src", "new.py")]


def test_a_root_moved_away_says_the_events_are_not_all(fed: tuple[FolderWatch, int]) -> None:
    watch, feed = fed
    os.write(feed, event(1, 0x800))
    assert not watch.drain().complete


def test_events_name_the_entry_and_whether_it_went(fed: tuple[FolderWatch, int]) -> None:
    watch, feed = fed
    os.write(feed, event(2, 0x200, b"old.py") + event(1, 0x002, b"caf\xe9.md"))
    drained = watch.drain()
    assert drained.complete
    assert [(t.parts, t.gone) for t in drained.touched] == [
        (("src", "old.py"), True),
        (("caf%E9.md",), False),  # the display name of bytes that are not UTF-8
    ]


def test_a_real_watch_reports_a_write_in_a_watched_folder(tmp_path: Path) -> None:
    watch = open_folder_watch()
    assert watch is not None
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        watch.begin_walk()
        watch.watch("ws", (), fd)
        watch.end_walk()
        (tmp_path / "a.py").write_text("x\n")
        assert ("a.py",) in [t.parts for t in watch.drain().touched]
    finally:
        os.close(fd)
        watch.close()


def test_forgetting_an_entry_stops_the_watches_at_and_below_it_and_no_others() -> None:
    # A model of the watches beside the real bookkeeping, through random watches (a folder
    # seen again, or moved: the same inode keeps its watch number), forgets of folders and of
    # files, and folders the kernel dropped (IN_IGNORED).
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    removed: list[int] = []

    def add(_fd: int, path: bytes, _mask: int) -> int:
        return int(path.rsplit(b"/", 1)[1])  # the folder's "inode" is its watch number

    def remove(_fd: int, wd: int) -> int:
        removed.append(wd)
        return 0

    watch = FolderWatch(read_end, add, remove)  # type: ignore[arg-type]
    rng = random.Random(7)
    names = ("a", "b", "c")
    model: dict[int, tuple[str, tuple[str, ...]]] = {}
    try:
        watch.begin_walk()
        for _ in range(3000):
            parts = tuple(rng.choice(names) for _ in range(rng.randrange(0, 4)))
            root = rng.choice(("ws", "lib"))
            roll = rng.random()
            if roll < 0.5:
                inode = rng.randrange(1, 40)
                watch.watch(root, parts, inode)
                model[inode] = (root, parts)
            elif roll < 0.9:
                if rng.random() < 0.5:
                    parts = (*parts, "file.txt")  # never a folder: nothing to stop
                removed.clear()
                watch.forget(root, parts)
                gone = {
                    wd for wd, (r, p) in model.items() if r == root and p[: len(parts)] == parts
                }
                assert set(removed) == gone
                for wd in gone:
                    del model[wd]
            elif model:
                wd = rng.choice(sorted(model))
                os.write(write_end, event(wd, 0x8000))  # IN_IGNORED: the kernel dropped it
                watch.drain()
                del model[wd]
        # Every watch the model keeps is still there: forgetting each root stops them all.
        removed.clear()
        watch.forget("ws", ())
        watch.forget("lib", ())
        assert sorted(removed) == sorted(model)
    finally:
        os.close(write_end)
        watch.close()


def test_a_refresh_that_wrote_most_of_the_index_merges_its_segments_and_keeps_every_row(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged: list[str] = []
    real_merge = index_store.merge

    def merge(db: sqlite3.Connection) -> None:
        merged.append("merge")
        real_merge(db)

    monkeypatch.setattr(index_store, "merge", merge)
    monkeypatch.setattr("safeport.context_server.index.search_index.MERGE_FROM_ROWS", 2)
    workspace = Workspace([ServedRoot("ws", tree)], ReadPolicy())
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace)
    try:
        index.refresh()  # a build: every row written, every shard merged
        assert merged == ["merge"] * SHARDS
        (tree / "docs" / "guide.md").write_text("# guide\nquagga\n")
        index.refresh()  # one row of five: no merge
        assert merged == ["merge"] * SHARDS
        for name in ("a.md", "b.md", "c.md"):
            (tree / "docs" / name).write_text(f"{name} quagga\n")
        index.refresh()  # three new rows of eight, and at least two: merged again
        assert merged == ["merge"] * (2 * SHARDS)
        assert rows(index.path) == cold_build(index, tmp_path)  # (the cold build merges too)
        found = sorted(c.rel for c in index.candidates("quagga", "ws", "", None))
        assert found == ["docs/a.md", "docs/b.md", "docs/c.md", "docs/guide.md"]
    finally:
        index.close()
        workspace.close()


def test_a_walk_begun_again_before_its_end_still_stops_the_watches_no_walk_kept() -> None:
    read_end, write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    removed: list[int] = []

    def add(_fd: int, path: bytes, _mask: int) -> int:
        return int(path.rsplit(b"/", 1)[1])

    def remove(_fd: int, wd: int) -> int:
        removed.append(wd)
        return 0

    watch = FolderWatch(read_end, add, remove)  # type: ignore[arg-type]
    try:
        watch.begin_walk()
        watch.watch("ws", (), 1)
        watch.watch("ws", ("a",), 2)
        watch.end_walk()
        watch.begin_walk()  # a check that watches the recorded folders, then gives up...
        watch.watch("ws", (), 1)
        watch.watch("ws", ("b",), 3)
        watch.begin_walk()  # ...for a walk of everything, which finds only the root
        watch.watch("ws", (), 1)
        watch.end_walk()
        assert sorted(removed) == [2, 3]
    finally:
        os.close(write_end)
        watch.close()
