"""The operations in-process: several roots, journal records, excerpts and pagination."""

from __future__ import annotations

import contextlib
import functools
import json
import time
from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from safeport.context_server import Refused, ServeOptions, build_server
from safeport.context_server.operations.reads_journal import DURABILITY_WINDOW_S, bounded_args
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.tools.journaled_calls import UNAVAILABLE, JournaledCalls
from safeport.shared.audit import verify_journal
from tests.context_server.listed import listed


def test_several_roots_are_named_and_paths_start_with_the_root_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    for name in ("app", "lib"):
        (tmp_path / name / "src").mkdir(parents=True)
        (tmp_path / name / "src" / "main.py").write_text(f"print('{name} unicorn')\n")
    (tmp_path / "other" / "app").mkdir(parents=True)  # same basename: gets a suffix
    roots = [str(tmp_path / "app"), str(tmp_path / "lib"), str(tmp_path / "other" / "app")]
    _, service = build_server(ServeOptions(roots=roots))
    names = [r.name for r in service.list_roots().roots]
    assert names == ["app", "lib", "app-2"]
    top = service.list_directory(".", 100, None)
    assert top.directories == names and not top.files and not top.blocked
    assert "lib unicorn" in service.read_file("lib/src/main.py").text
    with pytest.raises(Refused):
        service.read_file("src/main.py")  # no root named "src"
    assert service.search_files("*.py", ".", 100).matches == ["app/src/main.py", "lib/src/main.py"]
    service.index.refresh()
    hits = service.search_project("unicorn", ".", 20, None).hits
    assert [h.path for h in hits] == ["app/src/main.py", "lib/src/main.py"]
    page = service.search_project("unicorn", ".", 1, None)
    assert [h.path for h in page.hits] == ["app/src/main.py"] and page.next_cursor
    rest = service.search_project("unicorn", ".", 1, page.next_cursor)
    assert [h.path for h in rest.hits] == ["lib/src/main.py"]
    service.journal.close()


def test_journal_arguments_are_bounded_and_private_paths_replaced() -> None:
    def is_private(path: str) -> bool:
        return ".env" in path

    args = bounded_args(
        {"path": ".env", "paths": ["a.py", "x/.env"], "query": "q" * 1000, "limit": 5},
        is_private,
        hide_paths=False,
    )
    assert args["path"] == "<private>"
    assert args["paths"] == ["a.py", "<private>"]
    assert isinstance(args["query"], str) and len(args["query"]) == 201
    assert args["limit"] == 5
    hidden = bounded_args({"path": "innocent.txt"}, is_private, hide_paths=True)
    assert hidden["path"] == "<private>"  # refused as private after resolving a link


def test_every_call_served_or_refused_is_one_journal_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    (root / ".env").write_text("SECRET=CANARYjournal\n")
    (root / "innocent.txt").symlink_to(".env")
    server, service = build_server(ServeOptions(roots=[str(root)], origin="tests"))
    # The same journaled path the MCP tools take, without a client in between.
    calls = JournaledCalls(server, service)
    for path in ("a.py", ".env", "innocent.txt"):
        with contextlib.suppress(ToolError):
            calls._run("read_file", {"path": path}, functools.partial(service.read_file, path))
    service.journal.close()
    journal = home / "audit" / "reads.jsonl"
    bodies = [json.loads(line)["body"] for line in journal.read_text().splitlines()]
    assert [b["tool"] for b in bodies] == ["read_file", "read_file", "read_file"]
    assert [b["denied"] for b in bodies] == [False, True, True]
    assert bodies[1]["args"]["path"] == "<private>" and bodies[1]["reason"] == "private"
    assert bodies[2]["args"]["path"] == "<private>"  # the link's own name, hidden too
    assert all(b["origin"] == "tests" for b in bodies)
    assert bodies[0]["bytes"] > 0 and bodies[1]["bytes"] == 0
    assert "CANARYjournal" not in journal.read_text()
    assert verify_journal(journal).ok


@pytest.mark.parametrize(
    ("text", "start", "count", "lines", "next_line", "eof"),
    [
        ("a\nb\nc", 1, 2, ["a", "b"], 3, False),
        ("a\nb\nc", 3, 5, ["c"], None, True),
        ("a\nb\nc", 4, 5, [], None, True),
        ("a\nb\n", 1, 5, ["a", "b"], None, True),
        ("a\nb\n", 2, 1, ["b"], None, True),
        ("", 1, 5, [], None, True),
        ("one line, no newline", 1, 1, ["one line, no newline"], None, True),
    ],
)
def test_excerpts_count_lines_like_an_editor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    start: int,
    count: int,
    lines: list[str],
    next_line: int | None,
    eof: bool,
) -> None:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "f.txt").write_text(text)
    _, service = build_server(ServeOptions(roots=[str(tmp_path / "ws")]))
    excerpt = service.read_file_excerpt("f.txt", start, count, 1)
    assert (excerpt.lines, excerpt.next_line, excerpt.end_of_file) == (lines, next_line, eof)
    service.journal.close()


def test_the_profiles_are_the_seam_for_other_tool_sets() -> None:
    """The package's surface is pinned in tests/test_public_surface.py; here, what it means."""
    import safeport.context_server as context_server

    # The seam for other profiles: the reader profile registers only the workspace tools.
    assert set(context_server.PROFILES) == {"reader", "agent"}


def test_a_project_allowlist_serves_only_its_folders_and_loose_root_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    (home / "context.toml").write_text('projects = ["app"]\n')
    root = tmp_path / "ws"
    for folder in ("app", "scratch"):
        (root / folder).mkdir(parents=True)
        (root / folder / "main.py").write_text(f"# {folder} walrus\n")
    (root / "README.md").write_text("walrus readme\n")
    _, service = build_server(ServeOptions(roots=[str(root)]))
    assert "app walrus" in service.read_file("app/main.py").text
    assert "walrus readme" in service.read_file("README.md").text
    with pytest.raises(Refused) as caught:
        service.read_file("scratch/main.py")
    assert caught.value.reason == "out-of-scope"
    listing = {
        n: e["blocked"]
        for n, e in listed(service.list_directory(".", 100, None).model_dump()).items()
    }
    assert listing == {"README.md": "", "app": "", "scratch": "out-of-scope"}
    service.index.refresh()
    hits = service.search_project("walrus", ".", 20, None).hits
    assert sorted(h.path for h in hits) == ["README.md", "app/main.py"]
    service.journal.close()


def test_unknown_keys_in_context_toml_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safeport.errors import ConfigError

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    (home / "context.toml").write_text('[private]\nallow = ["*.env"]\n')
    with pytest.raises(ConfigError) as caught:
        build_server(ServeOptions(roots=[str(tmp_path)]))
    assert "private.allow" in caught.value.message


def one_file_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[JournaledCalls, WorkspaceService]:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    server, service = build_server(ServeOptions(roots=[str(root)]))
    return JournaledCalls(server, service), service


def test_nothing_is_served_when_the_journal_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, service = one_file_service(tmp_path, monkeypatch)
    service.journal.close()  # every append now fails as JournalUnavailable
    with pytest.raises(ToolError) as caught:
        calls._run("read_file", {"path": "a.py"}, functools.partial(service.read_file, "a.py"))
    assert "unavailable" in str(caught.value) and "x = 1" not in str(caught.value)


def test_once_a_write_fails_every_later_call_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, service = one_file_service(tmp_path, monkeypatch)
    read = functools.partial(service.read_file, "a.py")
    assert calls._run("read_file", {"path": "a.py"}, read).text == "x = 1\n"
    service.journal.flush()
    journal = service.journal.path
    journal.rename(journal.with_name("moved.jsonl"))
    journal.mkdir()  # the journal's name is now a folder: the next write fails
    calls._run("read_file", {"path": "a.py"}, read)  # answered; its record is being written
    deadline = time.monotonic() + (300 * DURABILITY_WINDOW_S)  # generous on loaded cores
    while True:
        try:
            calls._run("read_file", {"path": "a.py"}, read)
        except ToolError as refused:
            assert str(refused) == UNAVAILABLE and "x = 1" not in str(refused)
            break
        assert time.monotonic() < deadline, "calls were still served after a failed write"
        time.sleep(0.01)
    journal.rmdir()
    with pytest.raises(ToolError):  # and it stays refused: records were lost
        calls._run("read_file", {"path": "a.py"}, read)
    service.journal.close()
