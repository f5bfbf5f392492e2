"""The SQLite under the index: a current one keeps no text and deletes without it; the
system's, where no wheel installs and it is older than 3.43, keeps the older table. Each index
is read only by the SQLite that can, and one made by the other is dropped and built again."""

from __future__ import annotations

import contextlib
import platform
import sqlite3 as system_sqlite
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from safeport.context_server.index.search_index import SearchIndex, index_path
from safeport.context_server.index.shards import shard_paths
from safeport.context_server.index.sqlite_module import CONTENTLESS_DELETE, sqlite3
from safeport.context_server.policy.read_policy import ReadPolicy
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot

MARKER = "zq9-a-line-only-this-file-holds-7x4"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "notes.txt").write_text(f"first\n{MARKER}\n")
    (root / "src" / "other.py").write_text("print('other')\n")
    return root


def test_where_the_wheel_installs_the_index_keeps_no_text(tree: Path, tmp_path: Path) -> None:
    # The dependency installs on both machines the project runs on (pyproject.toml).
    assert (platform.machine() in ("x86_64", "aarch64")) == CONTENTLESS_DELETE
    workspace = Workspace([ServedRoot("ws", tree)], ReadPolicy())
    index = SearchIndex(index_path(tmp_path / "cache", workspace), workspace, watch=False)
    try:
        index.refresh()
        assert [c.rel for c in index.candidates(MARKER, "ws", "", None)] == ["src/notes.txt"]
        (tree / "src" / "notes.txt").write_text("first\nchanged\n")
        index.refresh()
        assert list(index.candidates(MARKER, "ws", "", None)) == []
        index.close()
        if CONTENTLESS_DELETE:
            # Neither the text nor any copy of it: the table holds the trigrams alone.
            for path in index.path.parent.iterdir():
                assert b"zq9-a-line" not in path.read_bytes(), path.name
                assert b"print('other')" not in path.read_bytes(), path.name
            assert index.path.name.endswith("-trigrams.sqlite")
    finally:
        workspace.close()


_BUILD = textwrap.dedent(
    """
    import sys
    if sys.argv[3] == "system":
        sys.modules["pysqlite3"] = sys.modules["pysqlite3.dbapi2"] = None  # as if no wheel
    from pathlib import Path
    from safeport.context_server.index.search_index import SearchIndex, index_path
    from safeport.context_server.index.sqlite_module import CONTENTLESS_DELETE, sqlite3
    from safeport.context_server.policy.read_policy import ReadPolicy
    from safeport.context_server.workspace.gate import Workspace
    from safeport.context_server.workspace.model import ServedRoot
    workspace = Workspace([ServedRoot("ws", Path(sys.argv[1]))], ReadPolicy())
    index = SearchIndex(index_path(Path(sys.argv[2]), workspace), workspace, watch=False)
    stats = index.refresh()
    found = [c.rel for c in index.candidates(sys.argv[4], "ws", "", None)]
    index.close()
    print(sqlite3.sqlite_version, CONTENTLESS_DELETE, stats.files, index.path.name, found)
    """
)


def build(tree: Path, cache: Path, sqlite: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, str(tree), str(cache), sqlite, MARKER],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().split(maxsplit=4)


@pytest.mark.skipif(
    not CONTENTLESS_DELETE or system_sqlite.sqlite_version_info >= (3, 43, 0),
    reason="needs the wheel's SQLite and a system SQLite older than 3.43",
)
def test_each_sqlite_builds_its_own_index_and_drops_the_others(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    old = build(tree, cache, "system")
    assert old[1:4] == ["False", "2", old[3]] and not old[3].endswith("-trigrams.sqlite")
    assert old[4] == "['src/notes.txt']"
    new = build(tree, cache, "wheel")
    assert new[1:3] == ["True", "2"] and new[3].endswith("-trigrams.sqlite")
    assert new[4] == "['src/notes.txt']"
    # The system's index is gone with its shards: only the one that can read it remains.
    names = sorted(p.name for p in (cache / "context").iterdir())
    assert names and all(name.startswith(new[3]) for name in names), names
    again = build(tree, cache, "system")
    assert again[3] == old[3] and again[4] == "['src/notes.txt']"
    names = sorted(p.name for p in (cache / "context").iterdir())
    assert all(name.startswith(old[3]) for name in names), names
    for shard in shard_paths(cache / "context" / old[3]):
        with contextlib.closing(sqlite3.connect(shard)) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == 3
