"""Stopping a server while its index walk runs: the walk is stopped and joined before the
folder watch and the journal it uses are closed, so no descriptor is used after its close.

The walk of a cold build is in progress when each stop comes (the tree is large enough for a
walk to last far longer than a start); nothing here depends on where exactly it stops.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.index.shards import shard_paths
from safeport.context_server.index.sqlite_module import sqlite3
from safeport.context_server.server import ServeOptions, build_server

NEEDLE = "kestrel-51be07"
# Said on stderr by a walk that outlived its watch: EBADF or EINVAL from inotify_add_watch.
OUTLIVED = (
    "folder watch not added",
    "Bad file descriptor",
    "Traceback",
    "refresh failed",
    "did not stop",
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("walked") / "proj"
    for i in range(1500):
        folder = root / f"pkg{i // 300}" / f"mod{i // 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04d}.py").write_text(f"def f{i}():\n    return {i}  # {'word ' * 40}\n")
    (root / "needle.md").write_text(f"{NEEDLE}\n")
    return root


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    return home


@pytest.fixture
def index_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.INFO, logger="safeport"):
        yield caplog


def test_fifty_stops_during_a_walk_leave_no_error_and_the_index_intact(
    tree: Path, home: Path, index_logs: pytest.LogCaptureFixture
) -> None:
    for _ in range(50):
        _, service = build_server(ServeOptions(roots=[str(tree)]))
        service.index.refresh_in_background(force=True)  # as `serve` starts
        time.sleep(0.01)
        service.close()
    # No error, and no watch added on a closed or reused descriptor (said at INFO). A watch
    # not made at all (the user's inotify instances all taken by others) is no error of ours.
    said = [r.getMessage() for r in index_logs.records]
    assert [m for m in said if "no folder watch" not in m] == []
    _, service = build_server(ServeOptions(roots=[str(tree)]))
    try:
        stats = service.index.refresh()
        assert stats.files == 1501
        assert [h.path for h in service.search_project(NEEDLE, ".", 5, None).hits] == ["needle.md"]
        assert_sound(service.index)
    finally:
        service.close()


def assert_sound(index: SearchIndex) -> None:
    for path in shard_paths(index.path):
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
# The server's own entry point, with its log at INFO: where a watch not added is said.
AT_INFO = (
    "import logging, sys; logging.basicConfig(stream=sys.stderr, level=logging.INFO, "
    "format='%(levelname)s %(message)s'); from safeport.context_server.__main__ import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def test_a_client_that_leaves_during_the_walk_leaves_no_descriptor_error(
    tree: Path, home: Path, tmp_path: Path
) -> None:
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    for run in range(2):
        errlog = tmp_path / f"stderr-{run}"
        with errlog.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", AT_INFO, "--root", str(tree)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
            )
            assert proc.stdin is not None and proc.stdout is not None
            killer = threading.Timer(60, proc.kill)  # bounds the read and the wait
            killer.start()
            try:
                proc.stdin.write((json.dumps(HELLO) + "\n").encode())
                proc.stdin.flush()
                assert json.loads(proc.stdout.readline())["id"] == 1
                proc.stdin.close()  # the client leaves while the cold build walks
                assert proc.wait(60) == 0
            finally:
                killer.cancel()
        said = errlog.read_text()
        assert not [line for line in said.splitlines() if any(w in line for w in OUTLIVED)]
