"""Listing pages served again: only while the folder's own watch reports no change, never across
a policy, a scope or a path, never for a page holding a link, and never after a change made
between the watch and the page."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from safeport.context_server.policy.read_policy import ReadPolicy, Refused
from safeport.context_server.workspace import folder_pages, inotify, mount_table
from safeport.context_server.workspace.folder_pages import FolderPages, Watched
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import Entry, FolderPage, ServedRoot

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd") or not hasattr(os, "O_NONBLOCK"), reason="Linux only"
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / "src" / "util.py").write_text("x = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "id_key").write_text("CANARYpages\n")
    return ws


@pytest.fixture
def workspace(root: Path) -> Iterator[Workspace]:
    ws = Workspace([ServedRoot("ws", root)], ReadPolicy())
    yield ws
    ws.close()


def page(ws: Workspace, path: str = "src") -> FolderPage:
    return ws.list_folder(ws.locate(path))


def by_name(listing: FolderPage) -> dict[str, Entry]:
    return {e.name: e for e in listing.entries}


def test_a_folder_listed_again_unchanged_is_served_from_its_page(workspace: Workspace) -> None:
    first = page(workspace)
    assert page(workspace) is first
    # Another page of the same folder is a page of its own.
    other = workspace.list_folder(workspace.locate("src"), 1, 1)
    assert [e.name for e in other.entries] == ["util.py"] and other is not first


def test_every_change_in_the_folder_is_seen_by_the_next_listing(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    src = root / "src"
    page(workspace)
    with (src / "app.py").open("a") as f:  # a write: the size changes, the folder's mtime not
        f.write("print('more')\n")
    assert by_name(page(workspace))["app.py"].size == len("print('hi')\nprint('more')\n")
    os.truncate(src / "util.py", 2)
    assert by_name(page(workspace))["util.py"].size == 2
    (src / "new.py").write_text("y = 2\n")
    assert "new.py" in by_name(page(workspace))
    os.link(src / "new.py", src / "again.py")  # a hard link: neither readable nor sized
    listed = by_name(page(workspace))
    assert listed["new.py"].blocked == "unreadable-type" and listed["new.py"].size is None
    (src / "again.py").unlink()
    assert by_name(page(workspace))["new.py"].blocked is None
    os.rename(src / "new.py", root / "moved.py")
    assert "new.py" not in by_name(page(workspace))
    os.chmod(src / "util.py", 0o000)
    try:
        page(workspace)  # whatever it says, it was looked at again (below)
        os.chmod(src / "util.py", 0o644)
        assert by_name(page(workspace))["util.py"].size == 2
    finally:
        os.chmod(src / "util.py", 0o644)
    # A private file moved in under an ordinary name is judged afresh.
    os.rename(tmp_path / "outside" / "id_key", src / ".env")
    assert by_name(page(workspace))[".env"].blocked == "private"


def test_a_page_holding_a_link_is_examined_every_time(workspace: Workspace, root: Path) -> None:
    (root / "other").mkdir()
    (root / "other" / "target.txt").write_text("plain\n")
    (root / ".env").write_text("TOKEN=CANARYpages\n")
    (root / "src" / "docs").symlink_to("../other/target.txt")
    assert by_name(page(workspace))["docs"].blocked is None
    # The link's target becomes a link to a private file: a change in another folder, which
    # no event on this one reports; the listing must judge the link again all the same.
    (root / "other" / "target.txt").unlink()
    (root / "other" / "target.txt").symlink_to("../.env")
    assert by_name(page(workspace))["docs"].blocked == "private"


def test_no_page_crosses_a_policy_a_scope_or_a_path(root: Path, tmp_path: Path) -> None:
    lenient = Workspace([ServedRoot("ws", root)], ReadPolicy())
    stricter = ReadPolicy(private_patterns=(*ReadPolicy().private_patterns, "util.py"))
    strict = Workspace([ServedRoot("ws", root)], stricter)
    try:
        assert by_name(page(lenient))["util.py"].blocked is None
        assert by_name(page(strict))["util.py"].blocked == "private"
        # One workspace, its scope narrowed by the client's roots: the page is judged again.
        assert by_name(page(lenient))["util.py"].blocked is None
        lenient.narrow([str(root / "src" / "app.py")])
        assert by_name(page(lenient))["util.py"].blocked == "out-of-scope"
    finally:
        lenient.close()
        strict.close()


def test_a_change_between_the_watch_and_the_page_keeps_no_page(root: Path) -> None:
    pages: FolderPages[str] = FolderPages()
    fd = os.open(root / "src", os.O_RDONLY | os.O_DIRECTORY)
    try:
        watched = pages.watch(fd)
        assert watched is not None
        (root / "src" / "app.py").write_text("changed\n")
        pages.keep("k", None, watched, "stale page")
        assert pages.find("k", None) is None
        # The same folder again, nothing changing: kept, and only for the same judge.
        watched = pages.watch(fd)
        assert watched is not None
        pages.keep("k", None, watched, "fresh page")
        assert pages.find("k", None) == "fresh page"
        assert pages.find("k", object()) is None
    finally:
        os.close(fd)
        pages.close()
    assert pages.find("k", None) is None  # closed: nothing kept, nothing found


def test_pages_are_bounded_and_their_watches_given_back(root: Path) -> None:
    pages: FolderPages[int] = FolderPages(max_pages=3)
    folders = []
    for i in range(6):
        folder = root / f"d{i}"
        folder.mkdir()
        folders.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY))
    try:
        for i, fd in enumerate(folders):
            watched = pages.watch(fd)
            assert watched is not None
            pages.keep(i, None, watched, i)
        assert [pages.find(i, None) for i in range(6)] == [None, None, None, 3, 4, 5]
        assert len(pages._keys) == 3  # the evicted folders are no longer watched
    finally:
        for fd in folders:
            os.close(fd)
        pages.close()


def test_the_instance_is_opened_at_the_first_listing_only(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []

    def counting() -> object:
        opened.append(1)
        return inotify.open_instance()

    monkeypatch.setattr(folder_pages, "open_instance", counting)
    ws = Workspace([ServedRoot("ws", root)], ReadPolicy())
    try:
        assert opened == []  # a workspace that lists nothing holds no instance
        page(ws)
        page(ws, ".")
        assert opened == [1]
    finally:
        ws.close()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert ws.folder_pages.watch(fd) is None  # closed: no instance opened again
    finally:
        os.close(fd)
    assert opened == [1]


def test_without_inotify_listings_are_examined_every_time(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder_pages, "open_instance", lambda: None)
    ws = Workspace([ServedRoot("ws", root)], ReadPolicy())
    try:
        first = page(ws)
        assert page(ws) is not first and page(ws) == first
    finally:
        ws.close()


def test_a_lost_event_drops_every_page(root: Path) -> None:
    pages: FolderPages[str] = FolderPages()
    fd = os.open(root / "src", os.O_RDONLY | os.O_DIRECTORY)
    try:
        watched = pages.watch(fd)
        assert watched is not None
        pages.keep("k", None, watched, "page")
        pages._drop_all()  # what an IN_Q_OVERFLOW event does
        assert pages.find("k", None) is None
        pages.keep("k", None, watched, "made before the loss")
        assert pages.find("k", None) is None
    finally:
        os.close(fd)
        pages.close()


def kernel_watches(pages: FolderPages[Any]) -> int:
    """The watches the kernel holds on the pages' inotify instance."""
    with open(f"/proc/self/fdinfo/{pages._fd}") as info:
        return sum(1 for line in info if line.startswith("inotify wd:"))


def test_a_watch_outlives_no_page_it_was_added_for(workspace: Workspace, root: Path) -> None:
    # The user's watches are few and shared with every other program of the user (and with the
    # index): a folder whose page is dropped, or never kept, must not stay watched.
    for i in range(10):
        folder = root / f"d{i}"
        folder.mkdir()
        page(workspace, f"d{i}")
        (folder / "new.txt").write_text("x\n")  # the page is dropped by the next look
        page(workspace, "src")
    (root / "linked").mkdir()
    (root / "linked" / "to_src").symlink_to("../src")
    page(workspace, "linked")  # holds a link: examined, never kept
    with pytest.raises(Refused):
        workspace.list_folder(workspace.locate("src/app.py"))
    assert kernel_watches(workspace.folder_pages) == len(workspace.folder_pages._keys) == 1
    pages = workspace.folder_pages
    pages._drop_all()  # what an IN_Q_OVERFLOW event does
    assert kernel_watches(pages) == 0


def mount_bind(source: Path, target: Path) -> None:
    done = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("bind mounts need privileges this run does not have")


def test_a_mount_on_a_listed_name_is_seen_by_the_next_listing(
    workspace: Workspace, root: Path, tmp_path: Path
) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("bind mounts need root")
    src = root / "src"
    os.mkfifo(tmp_path / "outside" / "fifo")
    (tmp_path / "outside" / "big.py").write_text("B" * 5000)
    assert by_name(page(workspace))["util.py"].size == len("x = 1\n")
    # A mount makes no event on the folder: the name is a FIFO now, not a readable file.
    mount_bind(tmp_path / "outside" / "fifo", src / "util.py")
    try:
        assert by_name(page(workspace))["util.py"].blocked == "unreadable-type"
    finally:
        subprocess.run(["umount", str(src / "util.py")], check=True)
    assert by_name(page(workspace))["util.py"].blocked is None
    # A file mounted on a name is written through its own path, with no event here either.
    mount_bind(tmp_path / "outside" / "big.py", src / "app.py")
    try:
        assert by_name(page(workspace))["app.py"].size == 5000
        with (tmp_path / "outside" / "big.py").open("a") as mounted:
            mounted.write("more")
        assert by_name(page(workspace))["app.py"].size == 5004
    finally:
        subprocess.run(["umount", str(src / "app.py")], check=True)


def test_a_folder_on_a_file_system_changed_from_elsewhere_keeps_no_page(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in: the test folder's own file system is taken for one whose other side (an NFS
    # server, a VM's host) changes files with no event here.
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        mount = mount_table._mount_id(fd)
    finally:
        os.close(fd)
    table = Path("/proc/self/mountinfo").read_bytes().splitlines()
    kind = next(line.split(b" - ")[1].split()[0] for line in table if line.split()[0] == mount)
    monkeypatch.setattr(mount_table, "_UNSEEN_TYPES", frozenset({kind}))
    ws = Workspace([ServedRoot("ws", root)], ReadPolicy())
    try:
        first = page(ws)
        assert page(ws) is not first and page(ws) == first
    finally:
        ws.close()


def test_a_scope_changed_during_a_listing_is_not_kept_as_the_old_scope_page(
    workspace: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.narrow([str(root / "src" / "app.py")])
    narrow = workspace.scope
    pages = workspace.folder_pages
    watch = pages.watch

    def widened_meanwhile(dir_fd: int) -> Watched | None:
        # The client's roots change while the listing runs (another call applies them).
        workspace.scope = None
        return watch(dir_fd)

    monkeypatch.setattr(pages, "watch", widened_meanwhile)
    page(workspace)
    monkeypatch.undo()
    workspace.scope = narrow
    assert by_name(page(workspace))["util.py"].blocked == "out-of-scope"


def test_a_page_kept_again_under_its_key_stays_watched(root: Path) -> None:
    pages: FolderPages[str] = FolderPages()
    fd = os.open(root / "src", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for judge in ("one policy", "another"):
            watched = pages.watch(fd)
            assert watched is not None
            pages.keep("k", judge, watched, f"page for {judge}")
        # The page it replaced was the folder's only one: its watch is the new page's too.
        assert pages.find("k", "another") == "page for another"
        assert kernel_watches(pages) == 1
    finally:
        os.close(fd)
        pages.close()
