"""Bounded work: each bound measured against a baseline call in the same run, as a ratio.

Absolute times on a shared CI machine move by 2x between runs; a ratio between two calls made
moments apart does not. Each measure takes the best of a few repetitions.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.operations.service import WorkspaceService
from tests.context_server.hostile import connected, server_params


def best_of(fn: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def cpu_of(fn: Callable[[], object], rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def make_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Path], WorkspaceService]]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    made: list[WorkspaceService] = []

    def make(root: Path) -> WorkspaceService:
        _, service = build_server(ServeOptions(roots=[str(root)]))
        made.append(service)
        return service

    yield make
    for service in made:
        service.journal.close()


def with_scan_budget(service: WorkspaceService, seconds: float) -> WorkspaceService:
    """The same workspace, index, feed and journal, with another search budget."""
    return WorkspaceService(
        service.workspace, service.index, service.feed, service.journal, scan_budget_s=seconds
    )


# -- walks: O(depth), not O(depth²) ---------------------------------------------------------


def nested_tree(root: Path, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    out = os.open("bottom.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, b"needle = 'deep'\n")
    os.close(out)
    os.close(fd)


def remove_nested(root: Path) -> None:
    """Remove a nested tree one level at a time (recursive removers overflow the stack)."""
    while (root / "d").exists():
        for entry in (root / "d").iterdir():
            if entry.name != "d":
                entry.unlink()
        if (root / "d" / "d").exists():
            (root / "d" / "d").rename(root / "next")
        (root / "d").rmdir()
        if (root / "next").exists():
            (root / "next").rename(root / "d")


def flat_tree(root: Path, folders: int) -> None:
    for i in range(folders):
        (root / f"d{i:05d}").mkdir()
    (root / f"d{folders - 1:05d}" / "bottom.py").write_text("needle = 'flat'\n")


def test_a_deep_tree_costs_what_a_flat_tree_of_as_many_folders_costs(
    tmp_path: Path,
    make_service: Callable[[Path], WorkspaceService],
    request: pytest.FixtureRequest,
) -> None:
    folders = 1500  # a path of 3,000 characters, still one a client can send
    deep, flat = tmp_path / "deep", tmp_path / "flat"
    deep.mkdir()
    flat.mkdir()
    nested_tree(deep, folders)
    flat_tree(flat, folders)
    request.addfinalizer(lambda: remove_nested(deep))
    deep_service, flat_service = make_service(deep), make_service(flat)

    def walks(service: WorkspaceService) -> Callable[[], object]:
        def run() -> None:
            assert len(service.search_files("*.py", ".", 10).matches) == 1
            assert service.index.refresh().files == 1

        return run

    flat_time = best_of(walks(flat_service))
    deep_time = best_of(walks(deep_service))
    # Opening every folder from the root made the deep walk ~50x the flat one here.
    assert deep_time <= 4 * flat_time + 0.05, (deep_time, flat_time)
    hits = deep_service.search_project("needle", ".", 20, None).hits
    assert [h.path.rsplit("/", 1)[-1] for h in hits] == ["bottom.py"]


# -- search: the deadline is checked before each candidate, and the cursor always moves ---------


def many_files(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"pkg{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i:05d}.py").write_text(f"# module {i}\nvalue = 'marker{i % 7}'\n")


@pytest.mark.parametrize("method", ["scan", "index"])
def test_with_no_time_left_each_page_handles_one_candidate_and_the_cursor_moves_on(
    tmp_path: Path,
    make_service: Callable[[Path], WorkspaceService],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    many_files(root, 60)
    service = make_service(root)
    monkeypatch.setattr(service.index, "refresh_in_background", lambda **_: None)
    query = "marker3" if method == "index" else "r3"  # 3+ characters use the index
    if method == "index":
        service.index.refresh()
    everything = service.search_project(query, ".", 200, None)
    assert everything.method == method and everything.next_cursor is None
    service = with_scan_budget(service, 0.0)
    seen_cursors: list[str] = []
    paged = []
    cursor = None
    for _ in range(500):
        page = service.search_project(query, ".", 200, cursor)
        assert len({h.path for h in page.hits}) <= 1  # the deadline stops after one candidate
        paged.extend(page.hits)
        if page.next_cursor is None:
            break
        assert page.next_cursor not in seen_cursors  # always forward, never the same cursor
        seen_cursors.append(page.next_cursor)
        cursor = page.next_cursor
    else:
        pytest.fail("the cursor never reached the end")
    assert paged == everything.hits


def test_a_search_with_a_short_budget_returns_after_about_that_budget(
    tmp_path: Path,
    make_service: Callable[[Path], WorkspaceService],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    many_files(root, 3000)
    service = make_service(root)
    monkeypatch.setattr(service.index, "refresh_in_background", lambda **_: None)
    full = best_of(lambda: service.search_project("zz", ".", 200, None), rounds=1)
    budgeted = with_scan_budget(service, full / 10)
    short = best_of(lambda: budgeted.search_project("zz", ".", 200, None))
    page = budgeted.search_project("zz", ".", 200, None)
    assert page.next_cursor is not None
    assert short <= full / 3, (short, full)


# -- excerpts: memory independent of start_column, CPU capped per call ------------------------


@pytest.fixture
def long_files(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    with (root / "one_line.txt").open("wb") as f:
        f.write(b"y" * (40 << 20) + b"\nend\n")
    with (root / "lines_big.txt").open("wb") as f:
        f.write(b"\n" * (60 << 20))
    with (root / "lines_budget.txt").open("wb") as f:
        f.write(b"\n" * (8 << 20))
    return root


def test_an_excerpt_far_into_a_long_line_needs_the_memory_of_one_at_its_start(
    long_files: Path, make_service: Callable[[Path], WorkspaceService]
) -> None:
    service = make_service(long_files)
    base = peak_bytes(lambda: service.read_file_excerpt("one_line.txt", 1, 5, 1))
    far = peak_bytes(lambda: service.read_file_excerpt("one_line.txt", 1, 5, 39 << 20))
    assert far <= 3 * base + (256 << 10), (far, base)


def test_an_excerpt_scans_a_bounded_amount_per_call_and_continues_from_its_cursor(
    long_files: Path, make_service: Callable[[Path], WorkspaceService]
) -> None:
    service = make_service(long_files)
    # Lines far past the end: a 60 MiB file costs what an 8 MiB one does (the per-call cap).
    budget = cpu_of(lambda: service.read_file_excerpt("lines_budget.txt", 10**9, 5, 1))
    big = cpu_of(lambda: service.read_file_excerpt("lines_big.txt", 10**9, 5, 1))
    assert big <= 2.5 * budget + 0.01, (big, budget)
    # The continuation cursor reaches the text without rescanning what was scanned.
    excerpt = service.read_file_excerpt("one_line.txt", 1, 5, (40 << 20) - 10)
    calls = 1
    while not excerpt.lines and excerpt.next_cursor:
        assert excerpt.next_line == 1 and excerpt.hint
        excerpt = service.read_file_excerpt(
            "one_line.txt", 1, 5, excerpt.next_column or 1, excerpt.next_cursor
        )
        calls += 1
    assert excerpt.lines == ["y" * 11, "end"] and excerpt.end_of_file
    assert 4 <= calls <= 7  # 40 MiB at 8 MiB per call


# -- wide folders: O(page) after the first, RSS bounded at 200,000 entries ---------------------

WIDE = 200_000


@pytest.fixture(scope="module")
def wide_workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    # In memory when the machine has a tmpfs: 200,000 creations on a busy shared disk take
    # a minute, on tmpfs about a second. What is measured (listing, memory) is the same.
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        base = Path(tempfile.mkdtemp(dir=shm, prefix="safeport-wide-"))
    else:
        base = tmp_path_factory.mktemp("wide")
    try:
        yield _wide_tree(base / "ws")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _wide_tree(root: Path) -> Path:
    (root / "wide").mkdir(parents=True)
    (root / "narrow").mkdir()
    for i in range(50):
        (root / "narrow" / f"f{i:06d}.py").write_bytes(b"")
    fd = os.open(root / "wide", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(WIDE):
            os.close(os.open(f"f{i:06d}.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return root


def test_later_pages_of_a_wide_folder_cost_what_a_small_folder_costs(
    wide_workspace: Path, make_service: Callable[[Path], WorkspaceService]
) -> None:
    service = make_service(wide_workspace)
    first = best_of(lambda: service.list_directory("wide", 50, None), rounds=1)
    small = best_of(lambda: service.list_directory("narrow", 50, None), rounds=5)
    later = best_of(lambda: service.list_directory("wide", 50, "o1.0.150000"), rounds=5)
    page = service.list_directory("wide", 50, "o1.0.150000")
    assert page.total_entries == WIDE and min(page.files) == "f150000.py"
    # Every page re-listed and classified all 200,000 entries before: ~300x the small folder.
    assert later <= 5 * small + 0.002, (later, small, first)
    # A new entry changes the folder's mtime: the next page sees it.
    (wide_workspace / "wide" / "zz_new.py").write_bytes(b"")
    try:
        assert service.list_directory("wide", 50, "o1.0.199990").total_entries == WIDE + 1
    finally:
        (wide_workspace / "wide" / "zz_new.py").unlink()


async def test_pages_of_a_folder_of_200000_entries_cost_the_server_next_to_nothing(
    wide_workspace: Path, tmp_path: Path
) -> None:
    """Listing and tree pages of a 200,000-entry folder add a few MB to the server, and the
    whole server (interpreter, SDK, detector, about 110 MB; the index's walk of the same folder,
    about 50 MB it keeps) stays under 200 MB. The walk's share is measured apart from the pages',
    which it would otherwise hide: it runs in the background, done or not when pages are asked."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        params = server_params([wide_workspace], home)
        async with connected(params, errlog) as client:
            await client.call_tool("list_directory", {"path": "narrow"})
            server = _server_process(home)
            while not await _index_ready(client):
                await anyio.sleep(0.2)
            baseline = server.memory_info().rss
            for cursor in (None, "o1.0.100000", "o1.0.199000"):
                args = {"path": "wide", "limit": 1000, "cursor": cursor}
                result = await client.call_tool("list_directory", args)
                assert not result.is_error
            tree = await client.call_tool("directory_tree", {"path": ".", "max_entries": 5000})
            assert tree.structured_content["truncated"] is True
            wide = server.memory_info().rss
    assert wide - baseline <= 20 * 1024 * 1024, (wide, baseline)
    assert wide <= 200 * 1024 * 1024, wide


async def _index_ready(client: Client) -> bool:
    health = await client.call_tool("get_health", {})
    assert health.structured_content is not None
    return bool(health.structured_content["index_state"] == "ready")


def _server_process(home: Path) -> psutil.Process:
    me = psutil.Process()
    for child in me.children(recursive=True):
        try:
            if child.environ().get("SAFEPORT_HOME") == str(home):
                return child
        except psutil.Error:
            continue
    raise AssertionError(f"no server process found among {me.children()} ({sys.executable})")


pytestmark = pytest.mark.anyio
