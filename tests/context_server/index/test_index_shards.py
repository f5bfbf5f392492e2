"""The sharded index answers exactly what one database built file by file answers.

The reference is built the way the index was before it had shards: one SQLite file, one row and
its text per walked file, inserted in walk order on one connection, queried with the same SQL.
The tree mixes names that sort close together, undecodable and non-ASCII names, binary and
oversized files, a hard link, a private file holding a canary and text that is not UTF-8.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeport.context_server.index import sqlite_store as index_store
from safeport.context_server.index.search_index import SearchIndex, trigram_query
from safeport.context_server.index.shards import SHARDS, shard_paths
from safeport.context_server.index.sqlite_module import sqlite3
from safeport.context_server.index.sqlite_store import MAX_INDEXED_BYTES, create_schema
from safeport.context_server.policy.read_policy import ReadPolicy, looks_binary
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from safeport.context_server.workspace.walk import WalkedFile
from tests.context_server.index.test_index_refresh import cold_build, rows

CANARY = "CANARY-shards-5e0b9a4d17"
QUERIES = ["needle", "NEEDLE", "nee", "ä€x", 'quote"d', "line two", "zz top", CANARY, "and é"]


@pytest.fixture
def tricky(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for folder in ("a", "a-b", "a.b", "a/b", "deep/er/est", "secrets", "Ünï"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for number in range(60):  # enough paths for both shards and for paging by `after`
        (root / "deep" / "er" / "est" / f"f{number:03}.txt").write_text(f"needle {number}\n")
    for name in ("a/x.py", "a-b/x.py", "a.b/x.py", "a/b/x.py", "a0.py", "a.py", "A.py"):
        (root / name).write_text(f"needle in {name}\nline two\n")
    (root / "Ünï" / "naïve €.md").write_text("ä€x and é\nNEEDLE upper\n")
    (root / os.fsdecode(b"raw-\xff.txt")).write_bytes(b"needle behind an undecodable name\n")
    (root / "latin1.txt").write_bytes(b"caf\xe9 needle \xff\xfe\n")
    (root / "quotes.txt").write_text('a "quote"d needle\r\nzz top\r\n')
    (root / "empty.txt").write_bytes(b"")
    (root / "binary.dat").write_bytes(b"needle\0\x01\x02" * 100)
    (root / "huge.txt").write_bytes(b"needle " * (MAX_INDEXED_BYTES // 7 + 1))
    (root / "secrets" / "key.txt").write_text(f"{CANARY} needle\n")
    (root / ".env").write_text(f"TOKEN={CANARY}\n")
    (root / "linked.txt").write_text("needle linked twice\n")
    os.link(root / "linked.txt", root / "a" / "twin.txt")
    return root


@pytest.fixture
def workspace(tricky: Path) -> Iterator[Workspace]:
    served = Workspace([ServedRoot("ws", tricky)], ReadPolicy())
    yield served
    served.close()


def reference_build(workspace: Workspace, path: Path) -> sqlite3.Connection:
    """One database, filled row by row on one connection, as before the shards."""
    db = sqlite3.connect(path)
    create_schema(db)
    for root in workspace.roots:
        for item in workspace.walk(
            root, (), max_bytes=MAX_INDEXED_BYTES, scoped=False, head_for=lambda _f: 1 << 21
        ):
            head = item.head if isinstance(item, WalkedFile) else None
            if head is None or len(head) > MAX_INDEXED_BYTES or looks_binary(head):
                continue
            assert isinstance(item, WalkedFile)
            cur = db.execute(
                "INSERT INTO files(root, rel, size, mtime_ns) VALUES (?, ?, ?, ?)",
                (root.name, item.relative, item.size, item.mtime_ns),
            )
            text = head.decode("utf-8", "replace")
            db.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (cur.lastrowid, text))
    db.commit()
    return db


def reference_candidates(db: sqlite3.Connection, query: str, prefix: str) -> set[tuple[str, str]]:
    sql = (
        "SELECT f.root, f.rel FROM files f "
        "WHERE f.id IN (SELECT rowid FROM fts WHERE fts MATCH ?) AND f.root = ?"
    )
    params: list[object] = [trigram_query(query), "ws"]
    if prefix:
        sql += " AND substr(f.rel, 1, ?) = ?"
        params += [len(prefix) + 1, prefix + "/"]
    return {(r, rel) for r, rel in db.execute(sql, params)}


def test_the_shards_answer_every_query_as_one_database_built_file_by_file(
    workspace: Workspace, tmp_path: Path
) -> None:
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace, watch=False)
    stats = index.refresh()
    with contextlib.closing(reference_build(workspace, tmp_path / "reference.sqlite")) as ref:
        reference_rows = ref.execute("SELECT count(*) FROM files").fetchone()[0]
        assert stats.files == reference_rows > 60
        for query in QUERIES:
            for prefix in ("", "a", "deep/er", "Ünï"):
                found = list(index.candidates(query, "ws", prefix, None))
                assert {(c.root, c.rel) for c in found} == reference_candidates(ref, query, prefix)
                # One order (the index's), each file once, and every suffix of it reached
                # again from the position before it, as a search's cursor resumes.
                positions = [c.position for c in found]
                assert positions == sorted(set(positions)), (query, prefix)
                for cut in range(len(found)):
                    again = list(index.candidates(query, "ws", prefix, found[cut].position))
                    assert again == found[cut + 1 :], (query, prefix, cut)
                # A position no candidate holds (another shard's, or none at all): what lies
                # after it, nothing more or less.
                for after in (0, 1, 2, 3, 7, (positions or [0])[-1] + 1, 10**12):
                    beyond = [c for c in found if c.position > after]
                    assert list(index.candidates(query, "ws", prefix, after)) == beyond
    assert sorted(c.rel for c in index.candidates("needle", "ws", "a", None)) == [
        "a/b/x.py",
        "a/x.py",
    ]
    # Both shards took rows: the answers above were merged, not read from one of them.
    for shard in shard_paths(index.path):
        with contextlib.closing(sqlite3.connect(shard)) as db:
            assert db.execute("SELECT count(*) FROM files").fetchone()[0] > 0
    assert len(shard_paths(index.path)) == SHARDS > 1
    for path in index.path.parent.iterdir():  # every shard, its log and shared memory
        assert CANARY.encode() not in path.read_bytes(), path.name
    index.close()


def refresh_whose_writes_fail(index: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh whose every write to a shard fails as a full or failing disk fails it."""

    def broken(*_args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(index_store, "write", broken)
        with pytest.raises(sqlite3.OperationalError):
            index.refresh()


def test_a_write_that_fails_in_a_shard_fails_the_refresh_and_the_next_walks_everything(
    workspace: Workspace, tricky: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace, watch=False)
    index.refresh()
    (tricky / "a.py").write_text("changed = True\n")
    (tricky / "fresh.txt").write_text("fresh needle\n")
    refresh_whose_writes_fail(index, monkeypatch)
    # Nothing of the failed refresh was committed, in either shard.
    assert "fresh.txt" not in [rel for _r, rel, *_ in rows(index.path)]
    after = index.refresh()
    assert after.walked_everything and after.added == 1 and after.updated == 1
    assert rows(index.path) == cold_build(index, tmp_path)
    index.close()


@pytest.mark.parametrize("watch", [False, True])
def test_a_write_that_fails_only_at_the_commit_makes_the_next_refresh_walk_everything(
    workspace: Workspace,
    tricky: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    watch: bool,
) -> None:
    # One changed file: the walk hands its write to a shard's writer and goes on, so the
    # failure is reported when the refresh commits, after the walk itself has ended well.
    index = SearchIndex(tmp_path / "cache" / "index.sqlite", workspace, watch=watch)
    index.refresh()
    (tricky / "a.py").write_text("changed = True\n")
    refresh_whose_writes_fail(index, monkeypatch)
    after = index.refresh()
    assert after.walked_everything and after.updated == 1
    assert rows(index.path) == cold_build(index, tmp_path)
    index.close()


def test_an_index_of_the_single_file_layout_is_rebuilt_whole(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = tmp_path / "cache" / "index.sqlite"
    index = SearchIndex(path, workspace, watch=False)
    index.refresh()
    index.close()
    # As the one-database layout left it: every row in that file, marked version 1.
    for shard in shard_paths(path)[1:]:
        for leftover in shard.parent.glob(shard.name + "*"):
            leftover.unlink()
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA user_version = 1")
        db.commit()
    reopened = SearchIndex(path, workspace, watch=False)
    assert not reopened.ready  # its rows were dropped: the next refresh is a cold build
    assert reopened.refresh().added == len(rows(path)) > 60
    assert rows(path) == cold_build(reopened, tmp_path)


def test_a_batch_is_written_in_statements_of_a_few_lengths() -> None:
    # Each length is a statement of its own in the connection's cache of prepared statements:
    # however the batches fall, a handful of lengths, each piece in order, every row once.
    lengths: set[int] = set()
    for count in range(0, 1500):
        at = 0
        for start, length in index_store.pieces(count, 128):
            assert start == at and 0 < length <= 128
            at += length
            lengths.add(length)
        assert at == count
    assert lengths == {1, 2, 4, 8, 16, 32, 64, 128}
