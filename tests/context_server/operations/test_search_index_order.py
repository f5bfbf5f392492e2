"""Searches through the index page in the index's own order: every candidate once, whatever
the page size, and a cursor holds a position of that order, never a path."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from safeport.context_server import ServeOptions, build_server
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
