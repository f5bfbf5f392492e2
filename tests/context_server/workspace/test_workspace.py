"""The I/O gate, deterministically: what was checked is exactly what gets opened."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from safeport.context_server.policy.read_policy import ReadPolicy, Refused
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import Located, ServedRoot


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hello')\n")
    (root / ".env").write_text("SECRET=CANARYgate\n")
    (root / "data").mkdir()
    (root / "data" / "app.py").write_text("CANARYdata\n")
    return Workspace([ServedRoot("ws", root)], ReadPolicy())


def refusal_of(workspace: Workspace, located: Located) -> str:
    with pytest.raises(Refused) as caught:
        workspace.read_head(located, 1024)
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


# -- resolution of its own ------------------------------------------------------------------


@pytest.fixture
def linked(workspace: Workspace, tmp_path: Path) -> Workspace:
    """Links that a cloned repository can hold: a loop, one out of the root, chains."""
    root = workspace.roots[0].path
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "shadowed.txt").write_text("CANARYoutside" * 1000)
    (root / "loop").symlink_to("loop")
    (root / "Out").symlink_to(outside)
    (root / "via_loop.txt").symlink_to("loop/../Out/shadowed.txt")
    (root / "via_loop_missing.txt").symlink_to("loop/../Out/absent.txt")
    (root / "via_out.txt").symlink_to("Out/shadowed.txt")
    (root / "via_out_missing.txt").symlink_to("Out/absent.txt")
    (root / "data" / "kept").mkdir()
    (root / "through_data.py").symlink_to("data/kept/../../src/app.py")
    (root / "through_data_missing.py").symlink_to("data/gone/../../src/app.py")
    (root / "up_and_back.py").symlink_to("src/../src/app.py")
    (root / "absolute.py").symlink_to(root / "src" / "app.py")
    (root / "absolute_out.txt").symlink_to(outside / "shadowed.txt")
    return workspace


def reason(workspace: Workspace, path: str) -> str:
    with pytest.raises(Refused) as caught:
        workspace.locate(path)
    return caught.value.reason


def test_a_loop_before_dotdot_is_refused_and_never_resolves_outside(linked: Workspace) -> None:
    # realpath stops at the loop and keeps the rest unresolved; resolution here counts links.
    assert reason(linked, "via_loop.txt") == "too-many-links"
    assert reason(linked, "via_loop_missing.txt") == "too-many-links"  # same answer: no oracle
    assert reason(linked, "loop") == "too-many-links"


def test_links_out_of_the_root_are_refused_whether_or_not_the_target_exists(
    linked: Workspace,
) -> None:
    for path in ("via_out.txt", "via_out_missing.txt", "Out", "absolute_out.txt"):
        assert reason(linked, path) == "out-of-scope", path


def test_a_link_through_a_private_folder_is_refused_before_anything_inside_is_looked_up(
    linked: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[object] = []
    real_open = os.open

    def recording_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    assert reason(linked, "through_data.py") == "private"
    assert reason(linked, "through_data_missing.py") == "private"
    assert b"kept" not in opened and b"gone" not in opened and b"data" not in opened


def test_links_inside_the_root_are_followed_by_the_resolver(linked: Workspace) -> None:
    for path in ("up_and_back.py", "absolute.py"):
        located = linked.readable_file(path)
        assert located.parts == ("src", "app.py")
        assert linked.read_head(located, 100).data == b"print('hello')\n"


def test_a_chain_of_a_thousand_links_is_a_clean_refusal_and_its_folder_still_lists(
    workspace: Workspace,
) -> None:
    folder = workspace.roots[0].path / "chain"
    folder.mkdir()
    (folder / "l0000").symlink_to("../src/app.py")
    for i in range(1, 1000):
        (folder / f"l{i:04d}").symlink_to(f"l{i - 1:04d}")
    assert reason(workspace, "chain/l0999") == "too-many-links"
    assert workspace.readable_file("chain/l0039").parts == ("src", "app.py")  # 40 links: fine
    page = workspace.list_folder(workspace.locate("chain"))
    blocked = {e.name: e.blocked for e in page.entries}
    assert page.total == 1000
    assert blocked["l0000"] is None and blocked["l0039"] is None
    assert blocked["l0040"] == "unreadable-type" and blocked["l0999"] == "unreadable-type"


def test_metadata_comes_from_descriptors_never_from_a_path_string(
    linked: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_stat = os.stat

    def only_relative(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if kwargs.get("dir_fd") is None and not isinstance(path, int):
            raise AssertionError(f"stat of a path string: {path!r}")
        return real_stat(path, *args, **kwargs)

    def never(*_: object, **__: object) -> None:
        raise AssertionError("a path string was resolved or stat'ed")

    monkeypatch.setattr(os, "stat", only_relative)
    monkeypatch.setattr(os, "lstat", never)
    monkeypatch.setattr(os.path, "realpath", never)
    located = linked.locate("up_and_back.py")
    assert located.st.st_size == len("print('hello')\n")
    assert linked.list_folder(linked.locate(".")).total > 5
    assert [f.relative for f in linked.walk_files(linked.roots[0])] == ["src/app.py"]


def test_a_file_is_read_only_up_to_the_size_it_had_when_opened(workspace: Workspace) -> None:
    path = workspace.roots[0].path / "growing.txt"
    path.write_bytes(b"a" * (1 << 20))
    located = workspace.readable_file("growing.txt")
    chunks = workspace.iter_chunks(located)
    read = len(next(chunks))
    with path.open("ab") as f:  # grows by 10 MiB while it is being read
        f.write(b"b" * (10 << 20))
    read += sum(len(c) for c in chunks)
    assert read == 1 << 20


def test_a_name_that_is_not_utf8_is_listed_walked_and_read_under_its_escaped_name(
    workspace: Workspace,
) -> None:
    src = os.fsencode(workspace.roots[0].path / "src")
    with open(os.path.join(src, b"caf\xe9.py"), "wb") as f:
        f.write(b"latin = 1\n")
    with open(os.path.join(src, b".env\xe9"), "wb") as f:
        f.write(b"CANARYlatin\n")
    names = {e.name: e.blocked for e in workspace.list_folder(workspace.locate("src")).entries}
    assert names == {"app.py": None, "caf%E9.py": None, ".env%E9": "private"}
    walked = [f.relative for f in workspace.walk_files(workspace.roots[0])]
    assert walked == ["src/app.py", "src/caf%E9.py"]
    located = workspace.readable_file("src/caf%E9.py")
    assert workspace.read_head(located, 100).data == b"latin = 1\n"
    assert reason(workspace, "src/.env%E9") == "private"


# -- cached verdicts never outlive what an entry is ------------------------------------------


def listed(workspace: Workspace, folder: str, name: str) -> tuple[str, str | None]:
    page = workspace.list_folder(workspace.locate(folder))
    entry = next(e for e in page.entries if e.name == name)
    return entry.type, entry.blocked


def test_one_name_as_a_file_then_a_link_a_folder_and_a_fifo_is_listed_as_it_is_now(
    workspace: Workspace,
) -> None:
    app = workspace.roots[0].path / "src" / "app.py"
    assert listed(workspace, "src", "app.py") == ("file", None)
    app.unlink()
    app.symlink_to("../.env")
    assert listed(workspace, "src", "app.py") == ("other", "private")
    app.unlink()
    app.mkdir()
    assert listed(workspace, "src", "app.py") == ("directory", None)
    app.rmdir()
    os.mkfifo(app)
    assert listed(workspace, "src", "app.py") == ("other", "unreadable-type")
    app.unlink()
    app.write_text("back\n")
    os.link(app, app.with_name("twin.py"))
    assert listed(workspace, "src", "app.py") == ("file", "unreadable-type")


def test_one_name_as_a_file_then_a_link_or_a_folder_is_walked_as_it_is_now(
    workspace: Workspace,
) -> None:
    app = workspace.roots[0].path / "src" / "app.py"

    def walked() -> list[str]:
        return [f.relative for f in workspace.walk_files(workspace.roots[0])]

    assert walked() == ["src/app.py"]
    app.unlink()
    app.symlink_to("../.env")
    assert walked() == []
    app.unlink()
    app.mkdir()
    (app / "inner.py").write_text("x = 1\n")
    assert walked() == ["src/app.py/inner.py"]
    os.link(app / "inner.py", app.with_name("twin.py"))
    assert walked() == []  # both names of a hard-linked file are left out


def test_a_new_policy_on_the_workspace_applies_to_the_next_listing_and_walk(
    workspace: Workspace,
) -> None:
    assert listed(workspace, "src", "app.py") == ("file", None)
    workspace.policy = ReadPolicy().tightened(patterns=["app.*"])
    assert listed(workspace, "src", "app.py") == ("other", "private")  # not even looked at
    assert list(workspace.walk_files(workspace.roots[0])) == []
