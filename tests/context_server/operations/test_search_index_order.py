"""Searches through the index page in the index's own order: every candidate once, whatever
the page size, and a cursor holds a position of that order, never a path."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.index.shards import SHARDS, shard_of
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.read_policy import InvalidInput


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceService:
    monkeypatch.setenv("SAFEPORT_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    # Names whose path order differs from the order they are written in, in several folders.
    for number in range(40):
        folder = root / ("zz" if number % 3 else "aa") / f"d{number % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{(number * 7) % 40:02d}.txt").write_text(f"line one\nthe unicorn {number}\n")
    (root / "aa" / "other.txt").write_text("nothing to find here\n")
    _, built = build_server(ServeOptions(roots=[str(root)]))
    built.index.refresh()
    return built


def pages(service: WorkspaceService, query: str, path: str, limit: int) -> list[list[str]]:
    found: list[list[str]] = []
    cursor = None
    for _ in range(100):
        page = service.search_project(query, path, limit, cursor)
        assert page.method == "index"
        found.append([hit.path for hit in page.hits])
        cursor = page.next_cursor
        if cursor is None:
            return found
    pytest.fail("the cursor never reached the end")


def test_every_page_size_reaches_every_file_once(service: WorkspaceService) -> None:
    whole = pages(service, "unicorn", ".", 200)
    assert len(whole) == 1 and len(whole[0]) == len(set(whole[0])) == 40
    for limit in (1, 3, 7, 39):
        paged = [path for page in pages(service, "unicorn", ".", limit) for path in page]
        assert paged == whole[0], limit
    # A folder's search holds that folder's files only, each once, however it is paged.
    folder = [path for page in pages(service, "unicorn", "aa", 2) for path in page]
    assert sorted(folder) == sorted(p for p in whole[0] if p.startswith("aa/"))
    assert len(folder) == len(set(folder)) > 0
    service.journal.close()


def _index_cursor(after: str, scope: int = 0) -> str:
    position = base64.urlsafe_b64encode(after.encode()).decode().rstrip("=")
    return f"q3.i.{scope}.{position}"


@pytest.mark.parametrize(
    "cursor",
    [
        _index_cursor("zz/d1/f07.txt"),  # a path where the index keeps a position
        _index_cursor("-1"),
        _index_cursor("1e3"),
        _index_cursor(" 12"),
        _index_cursor("9" * 40),  # beyond any row id
        "q2.i.0." + base64.urlsafe_b64encode(b"aa/d0/f00.txt").decode().rstrip("="),
    ],
)
def test_a_cursor_that_holds_no_index_position_is_refused(
    service: WorkspaceService, cursor: str
) -> None:
    with pytest.raises(InvalidInput, match="invalid cursor"):
        service.search_project("unicorn", ".", 5, cursor)
    service.journal.close()


def test_a_cursor_from_the_middle_resumes_after_its_position(service: WorkspaceService) -> None:
    first = service.search_project("unicorn", ".", 5, None)
    assert first.next_cursor is not None
    rest = [path for page in pages(service, "unicorn", ".", 200) for path in page]
    after = service.search_project("unicorn", ".", 200, first.next_cursor)
    assert [h.path for h in first.hits] + [h.path for h in after.hits] == rest
    service.journal.close()


def follow(service: WorkspaceService, cursor: str | None) -> list[str]:
    found: list[str] = []
    while cursor is not None:
        page = service.search_project("unicorn", ".", 3, cursor)
        found += [hit.path for hit in page.hits]
        cursor = page.next_cursor
    return found


def test_files_rewritten_between_pages_are_each_returned_once(
    service: WorkspaceService, tmp_path: Path
) -> None:
    # As a formatter rewrites a project while an agent pages through a search: a changed file
    # keeps its place in the index's order, so nothing is returned twice or skipped.
    first = service.search_project("unicorn", ".", 3, None)
    before = [hit.path for hit in first.hits]
    files = sorted((tmp_path / "ws").rglob("f*.txt"))
    (tmp_path / "ws" / before[0]).unlink()  # one already returned goes
    for path in files:
        if path.exists():
            path.write_text(path.read_text() + "# formatted\n")
    service.index.refresh()
    rest = follow(service, first.next_cursor)
    assert len(rest) == len(set(rest)) and not set(rest) & set(before)
    assert sorted(before[1:] + rest) == sorted(
        str(p.relative_to(tmp_path / "ws")) for p in files if p.exists()
    )
    service.journal.close()


def test_files_added_between_pages_come_after_them_even_where_rows_went(
    service: WorkspaceService, tmp_path: Path
) -> None:
    # Every row but the one the cursor stands on goes, then new files come, in both shards:
    # none may take a place the first page has passed (an id given again), or the cursor
    # would skip it.
    root = tmp_path / "ws"
    first = service.search_project("unicorn", ".", 10, None)
    kept = first.hits[-1].path  # the row the cursor stands on
    for gone in [hit.path for hit in first.hits[:-1]] + follow(service, first.next_cursor):
        (root / gone).unlink()
    assert (root / kept).exists()
    added = []
    for number in range(4 * SHARDS):
        name = next(
            f"zz/new{number}-{k}.txt"
            for k in range(1000)
            if shard_of("ws", f"zz/new{number}-{k}.txt") == number % SHARDS
        )
        (root / name).write_text("a new unicorn\n")
        added.append(name)
    service.index.refresh()
    assert sorted(follow(service, first.next_cursor)) == sorted(added)
    service.journal.close()


@pytest.mark.parametrize("query", ["\ud800abc", "abc\udfff", "x\udcffyz"])
def test_a_query_holding_a_lone_surrogate_is_refused(service: WorkspaceService, query: str) -> None:
    with pytest.raises(InvalidInput, match="invalid query"):
        service.search_project(query, ".", 5, None)
    service.journal.close()
