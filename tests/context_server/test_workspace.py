"""The I/O gate, deterministically: what was checked is exactly what gets opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from safeport.context_server.policy import ReadPolicy, Refused
from safeport.context_server.workspace import ServedRoot, Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / ".env").write_text("SECRET=CANARYgate\n")
    (root / "data").mkdir()
    (root / "data" / "app.py").write_text("CANARYdata\n")
    return Workspace([ServedRoot("ws", root)], ReadPolicy())


def refusal_of(workspace: Workspace, located: object) -> str:
    with pytest.raises(Refused) as caught:
        workspace.read_head(located, 1024)  # type: ignore[arg-type]
    return caught.value.reason


def test_a_file_replaced_by_a_link_after_the_check_is_not_followed(workspace: Workspace) -> None:
    located = workspace.readable_file("src/app.py")
    app = workspace.roots[0].path / "src" / "app.py"
    app.unlink()
    app.symlink_to("../.env")
    assert refusal_of(workspace, located) == "changed"


def test_a_folder_replaced_by_a_link_after_the_check_is_not_followed(workspace: Workspace) -> None:
    located = workspace.readable_file("src/app.py")
    root = workspace.roots[0].path
    (root / "src").rename(root / "src.old")
    (root / "src").symlink_to("data")
    assert refusal_of(workspace, located) == "changed"


def test_a_file_replaced_by_another_file_after_the_check_is_refused(workspace: Workspace) -> None:
    located = workspace.readable_file("src/app.py")
    app = workspace.roots[0].path / "src" / "app.py"
    fresh = app.with_name("app.py.new")
    fresh.write_text("a different inode\n")  # created while the old one exists: a new inode
    os.replace(fresh, app)
    assert refusal_of(workspace, located) == "changed"


def test_the_checked_file_is_read_when_nothing_moved(workspace: Workspace) -> None:
    located = workspace.readable_file("src/app.py")
    assert workspace.read_head(located, 1024).data == b"print('hello')\n"


def test_a_fifo_is_refused_without_blocking(workspace: Workspace) -> None:
    os.mkfifo(workspace.roots[0].path / "pipe.txt")
    with pytest.raises(Refused) as caught:
        workspace.readable_file("pipe.txt")
    assert caught.value.reason == "unreadable-type"


def test_a_hard_link_is_refused_and_its_size_hidden(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("CANARYoutside\n" * 10)
    os.link(outside, workspace.roots[0].path / "copy.txt")
    with pytest.raises(Refused) as caught:
        workspace.readable_file("copy.txt")
    assert caught.value.reason == "unreadable-type"
    root = workspace.locate(".")
    entry = next(e for e in workspace.list_folder(root).entries if e.name == "copy.txt")
    assert (entry.blocked, entry.size) == ("unreadable-type", None)


def test_a_private_name_is_refused_before_any_lookup(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_disk(*_: object, **__: object) -> None:
        raise AssertionError("the disk was consulted for a private name")

    monkeypatch.setattr(os.path, "realpath", no_disk)
    monkeypatch.setattr(os, "lstat", no_disk)
    monkeypatch.setattr(os, "open", no_disk)
    monkeypatch.setattr(os, "readlink", no_disk)
    for path in (".env", ".env.missing", "data/anything", "keys/id_ed25519"):
        with pytest.raises(Refused) as caught:
            workspace.locate(path)
        assert caught.value.reason == "private"


def test_the_sibling_prefix_of_a_root_is_outside_it(workspace: Workspace, tmp_path: Path) -> None:
    sibling = tmp_path / "ws-secrets"
    sibling.mkdir()
    (sibling / "s.txt").write_text("CANARYsibling\n")
    (workspace.roots[0].path / "sib.txt").symlink_to(sibling / "s.txt")
    with pytest.raises(Refused) as caught:
        workspace.readable_file("sib.txt")
    assert caught.value.reason == "out-of-scope"


def test_walks_never_enter_private_or_ignored_folders(workspace: Workspace) -> None:
    root = workspace.roots[0]
    (root.path / "node_modules" / "x").mkdir(parents=True)
    (root.path / "node_modules" / "x" / "i.js").write_text("x\n")
    found = [f.relative for f in workspace.walk_files(root)]
    assert found == ["src/app.py"]
