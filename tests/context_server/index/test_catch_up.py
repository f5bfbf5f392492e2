"""A new server process checks what the last walk recorded, by stat, instead of walking.

Two services built one after the other on the same home stand for two sessions (two server
processes): the second has nothing of the first but the index and its walk record on disk.
Whatever changed between them, by any route that leaves a folder's mtime alone or not, the
second session's first search finds it, and the check re-read only what changed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from safeport.context_server.index.catch_up import touched_since
from safeport.context_server.index.search_index import IndexStats
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.server import ServeOptions, build_server
from safeport.shared.paths import locate

NEEDLE = "quokka-7c41d2"
HOUR_AGO = time.time() - 3600


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for folder in ("src/app", "src/lib", "docs", "assets"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "app" / "main.py").write_text("def main():\n    return 'walrus-aaaaaa'\n")
    (root / "src" / "lib" / "util.py").write_text("UTIL = 1\n")
    (root / "docs" / "guide.md").write_text("# guide\n")
    (root / "assets" / "blob.txt").write_bytes(b"\0binary\0" * 16)
    (root / "assets" / "big.txt").write_text("x" * (1024 * 1024 + 10))
    (root / "README.md").write_text("readme\n")
    os.link(root / "src" / "lib" / "util.py", root / "src" / "lib" / "util-twin.py")
    # Everything as of an hour ago: a recorded mtime is trusted only once a few seconds old.
    for path in [*sorted(root.rglob("*"), reverse=True), root]:
        os.utime(path, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)
    return root


@pytest.fixture
def sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Path], WorkspaceService]]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    made: list[WorkspaceService] = []

    def start(root: Path) -> WorkspaceService:
        """A session as `serve` starts one: the start-up refresh begins at once."""
        _, service = build_server(ServeOptions(roots=[str(root)]))
        made.append(service)
        service.index.refresh_in_background(force=True)
        return service

    yield start
    for service in made:
        service.close()


def finished(service: WorkspaceService) -> None:
    service.index.wait(60)
    service.close()


def check_of(service: WorkspaceService) -> IndexStats:
    """What the session's start-up refresh did."""
    stats = service.index.last_stats
    assert stats is not None
    return stats


def first_search(service: WorkspaceService, query: str) -> list[str]:
    found = service.search_project(query, ".", 50, None)
    assert found.method == "index"  # from the index, not a scan of everything
    return sorted({hit.path for hit in found.hits})


def keep_mtime(path: Path, write: Callable[[Path], object]) -> None:
    """Change a file and put its folder's mtime back: only the file's own stat tells."""
    folder = path.parent.stat()
    write(path)
    os.utime(path.parent, ns=(folder.st_atime_ns, folder.st_mtime_ns))


def new_deep_folder(root: Path) -> None:
    (root / "src/app/x/y").mkdir(parents=True)
    (root / "src/app/x/y/deep.py").write_text(f"V = '{NEEDLE}'\n")


def hard_link_gone(path: Path) -> None:
    (path.parent / "util-twin.py").unlink()
    path.write_text(f"U = '{NEEDLE}'\n")


def renamed_with_needle(root: Path) -> None:
    (root / "docs/guide.md").write_text(f"{NEEDLE}\n")
    (root / "docs").rename(root / "manual")


CHANGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "content, same size": (
        lambda r: keep_mtime(
            r / "src/app/main.py",
            lambda p: p.write_text(p.read_text().replace("walrus-aaaaaa", "quokka-7c41d2")),
        ),
        "src/app/main.py",
    ),
    "a new file in a folder": (
        lambda r: (r / "docs" / "new.md").write_text(f"{NEEDLE}\n"),
        "docs/new.md",
    ),
    "a new file at the root": (lambda r: (r / "top.md").write_text(f"{NEEDLE}\n"), "top.md"),
    "a new folder deep down": (new_deep_folder, "src/app/x/y/deep.py"),
    "a folder renamed": (renamed_with_needle, "manual/guide.md"),
    "a binary file now text": (
        lambda r: keep_mtime(r / "assets/blob.txt", lambda p: p.write_text(f"{NEEDLE}\n")),
        "assets/blob.txt",
    ),
    "a file too large now small": (
        lambda r: keep_mtime(r / "assets/big.txt", lambda p: p.write_text(f"{NEEDLE}\n")),
        "assets/big.txt",
    ),
    "a hard link gone": (
        lambda r: keep_mtime(r / "src/lib/util.py", hard_link_gone),
        "src/lib/util.py",
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_between_two_sessions_is_found_by_the_next_sessions_first_search(
    change: str, root: Path, sessions: Callable[[Path], WorkspaceService]
) -> None:
    finished(sessions(root))  # the first session walks everything and records it
    make_change, where = CHANGES[change]
    make_change(root)
    second = sessions(root)
    assert first_search(second, NEEDLE) == [where]
    stats = check_of(second)
    assert not stats.walked_everything
    assert stats.added + stats.updated == 1


def test_an_unchanged_tree_is_checked_without_reading_a_file(
    root: Path, sessions: Callable[[Path], WorkspaceService]
) -> None:
    finished(sessions(root))
    second = sessions(root)
    assert first_search(second, "walrus-aaaaaa") == ["src/app/main.py"]
    stats = check_of(second)
    assert not stats.walked_everything
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 0)
    assert second.get_health().index_walk == "idle"  # the check has ended


def test_a_removed_file_leaves_the_index_by_the_check(
    root: Path, sessions: Callable[[Path], WorkspaceService]
) -> None:
    finished(sessions(root))
    (root / "src/app/main.py").unlink()
    second = sessions(root)
    assert first_search(second, "walrus-aaaaaa") == []
    stats = check_of(second)
    assert stats.removed == 1 and not stats.walked_everything


def test_a_new_policy_walks_everything_instead_of_trusting_the_record(
    root: Path, sessions: Callable[[Path], WorkspaceService]
) -> None:
    finished(sessions(root))
    config = locate().context_config
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[private]\npatterns = ["main.*"]\n')
    second = sessions(root)
    second.index.wait(60)
    assert check_of(second).walked_everything
    assert second.search_project("walrus-aaaaaa", ".", 50, None).hits == []


@pytest.mark.parametrize("change", list(CHANGES))
def test_after_the_check_a_change_is_found_by_folder_events_without_another_check(
    change: str,
    root: Path,
    sessions: Callable[[Path], WorkspaceService],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The check watched every folder it looked at: the refresh after it costs what changed,
    # not another stat of every file, and still finds the change.
    finished(sessions(root))
    second = sessions(root)
    second.index.wait(60)
    assert not check_of(second).walked_everything
    checks: list[int] = []

    def counted(*args: Any) -> Any:
        checks.append(1)
        return touched_since(*args)

    monkeypatch.setattr("safeport.context_server.index.refresh.touched_since", counted)
    make_change, where = CHANGES[change]
    make_change(root)
    stats = second.index.refresh()
    assert checks == []  # by the folder events alone
    assert not stats.walked_everything and stats.added + stats.updated == 1
    assert first_search(second, NEEDLE) == [where]
