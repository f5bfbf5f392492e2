"""Every call leaves a record; crashes are `internal`; the trail is this server's; the index
degrades visibly and retries; a name that is not UTF-8 breaks nothing; Ctrl-C on a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.index.search_index import SearchIndex
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.server import TERMINAL_NOTICE
from safeport.context_server.tools.journaled_calls import INTERNAL
from safeport.shared.audit import verify_journal
from tests.context_server.hostile import connected, result_text, server_params
from tests.context_server.listed import names

pytestmark = pytest.mark.anyio


def workspace(base: Path, name: str = "proj") -> tuple[Path, Path]:
    root = base / name
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 'pelican'\n")
    (root / ".env").write_text("TOKEN=CANARYcalls\n")
    home = base / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    return root, home


def journal_bodies(home: Path) -> list[dict[str, Any]]:
    lines = (home / "audit" / "reads.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["body"] for line in lines]


async def test_calls_the_sdk_turns_down_before_any_tool_runs_are_journaled_too(
    tmp_path: Path,
) -> None:
    root, home = workspace(tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": 123}),
        ("read_file", {}),
        ("list_directory", {"path": ".", "limit": "many"}),
        ("no_such_tool", {"path": ".env"}),
        ("read_file", {"path": ".env"}),
        ("read_file", {"path": "src/app.py"}),
    ]
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([root], home), errlog) as client:
            for tool, args in calls:
                result = await client.call_tool(tool, args)
                assert result.is_error == ((tool, args) != calls[-1]), (tool, result_text(result))
    bodies = journal_bodies(home)
    assert [(b["tool"], b["reason"]) for b in bodies] == [
        ("read_file", "invalid"),
        ("read_file", "invalid"),
        ("list_directory", "invalid"),
        ("no_such_tool", "unknown-tool"),
        ("read_file", "private"),
        ("read_file", None),
    ]
    assert bodies[3]["args"] == {"path": "<private>"}  # the privacy of paths holds here too
    assert verify_journal(home / "audit" / "reads.jsonl").ok


async def test_an_unexpected_exception_is_an_internal_error_with_a_record_and_no_detail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = workspace(tmp_path)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    server, service = build_server(ServeOptions(roots=[str(root)]))

    def crash(*_: object) -> None:
        raise RuntimeError(f"CANARYcrash at {root}/.env")

    monkeypatch.setattr(service, "list_directory", crash)
    monkeypatch.setattr(service, "get_health", lambda: {"not": "a result model"})
    with anyio.fail_after(30):
        async with Client(server) as client:
            crashed = await client.call_tool("list_directory", {"path": "src"})
            malformed = await client.call_tool("get_health", {})
    service.journal.close()
    for result in (crashed, malformed):
        assert result.is_error and result_text(result).strip().endswith(f": {INTERNAL}")
    bodies = journal_bodies(home)
    assert [(b["tool"], b["reason"]) for b in bodies] == [
        ("list_directory", "internal"),
        ("get_health", "internal"),
    ]
    assert "CANARYcrash" not in (home / "audit" / "reads.jsonl").read_text()


async def test_the_audit_trail_shows_only_the_records_of_the_roots_this_server_serves(
    tmp_path: Path,
) -> None:
    mine, home = workspace(tmp_path, "mine")
    theirs, _ = workspace(tmp_path, "theirs")
    (theirs / "src" / "CANARYtheirname.py").write_text("x = 1\n")
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(90):
        async with connected(server_params([theirs], home), errlog) as other:
            await other.call_tool("read_file", {"path": "src/CANARYtheirname.py"})
            await other.call_tool("search_project", {"query": "CANARYtheirquery"})
        async with connected(server_params([mine, theirs], home), errlog) as both:
            await both.call_tool("read_file", {"path": "mine/src/app.py"})
            spanning = await both.call_tool("get_audit_trail", {"limit": 1000})
        async with connected(server_params([mine], home), errlog) as client:
            await client.call_tool("read_file", {"path": "src/app.py"})
            trail = await client.call_tool("get_audit_trail", {"limit": 1000})
    text = result_text(trail)
    assert "CANARYtheir" not in text
    tools = [e["tool"] for e in trail.structured_content["entries"]]
    assert tools == ["read_file"]  # its own read; not the one of the server serving both
    # A server serving both roots sees the records of either (every root they name is its own).
    assert "CANARYtheirname" in result_text(spanning)
    roots = {tuple(b["roots"]) for b in journal_bodies(home)}
    assert roots == {(str(theirs),), tuple(sorted([str(mine), str(theirs)])), (str(mine),)}


def test_a_failed_index_refresh_shows_as_degraded_with_its_reason_and_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = workspace(tmp_path)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    _, built = build_server(ServeOptions(roots=[str(root)]))
    built.index.close()
    # Retried at the next search, however soon: no wait between the failure and the retry.
    index = SearchIndex(built.index.path, built.workspace, retry_after_s=0.0)
    service = WorkspaceService(built.workspace, index, built.feed, built.journal)
    real_walk = service.workspace.walk
    failures = iter([UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")])

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real_walk(*args, **kwargs)

    monkeypatch.setattr(service.workspace, "walk", failing_once)
    service.index.refresh_in_background(force=True)
    service.index.wait(30)
    health = service.get_health()
    assert health.status == "degraded"
    assert health.index_error is not None and "UnicodeEncodeError" in health.index_error
    service.search_project("pelican", ".", 20, None)  # any search starts the retry
    service.index.wait(30)
    health = service.get_health()
    assert (health.status, health.index_error, health.index_files) == ("ok", None, 1)
    assert service.search_project("pelican", ".", 20, None).method == "index"
    service.journal.close()


NOT_UTF8 = b"r\xe9sum\xe9.py"


async def test_a_name_that_is_not_utf8_breaks_no_tool_and_no_index(tmp_path: Path) -> None:
    root, home = workspace(tmp_path)
    with open(os.path.join(os.fsencode(root / "src"), NOT_UTF8), "wb") as f:
        f.write(b"latin = 'heron'\n")
    os.mkdir(os.path.join(os.fsencode(root), b"d\xffir"))
    with open(os.path.join(os.fsencode(root), b"d\xffir", b"inner.md"), "wb") as f:
        f.write(b"heron notes\n")
    shown = "src/r%E9sum%E9.py"
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(90):
        async with connected(server_params([root], home), errlog) as client:

            async def ok(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(tool, args)
                assert not result.is_error, (tool, result_text(result))
                return dict(result.structured_content or {})

            listing = await ok("list_directory", {"path": "src"})
            assert set(names(listing)) == {"app.py", "r%E9sum%E9.py"}
            tree = await ok("directory_tree", {"path": ".", "max_depth": 3})
            assert {shown, "d%FFir/inner.md"} <= set(names(tree))
            found = await ok("search_files", {"pattern": "*.py"})
            assert shown in found["matches"]
            hits = await ok("search_project", {"query": "he"})  # a scan
            assert {h["path"] for h in hits["hits"]} == {shown, "d%FFir/inner.md"}
            research = await ok("search", {"query": "heron"})
            assert {r["id"] for r in research["results"]} >= {shown}
            assert "heron" in (await ok("read_file", {"path": shown}))["text"]
            assert "heron" in (await ok("fetch", {"id": research["results"][0]["url"]}))["text"]
            changes = await ok("get_recent_changes", {"limit": 50})
            assert shown in {c["path"] for c in changes["changes"]}
            for _ in range(100):  # the background index, built at start, must get there
                health = await ok("get_health", {})
                if health["index_state"] == "ready":
                    break
                await anyio.sleep(0.1)
            assert (health["status"], health["index_files"]) == ("ok", 3), health
            indexed = await ok("search_project", {"query": "heron"})
            assert indexed["method"] == "index" and len(indexed["hits"]) == 2
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "context", "index", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "indexed 3 files" in done.stderr


def test_run_by_hand_on_a_terminal_it_says_what_it_is_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    root, home = workspace(tmp_path)
    pid, master = pty.fork()
    if pid == 0:  # the child: a real terminal on stdin, stdout and stderr
        os.environ["SAFEPORT_HOME"] = str(home)
        os.execv(sys.executable, [sys.executable, "-m", "safeport", "context", "serve",
                                  "--root", str(root)])  # fmt: skip
    try:
        seen = _read_until(master, b"sp client install", 30)
        assert TERMINAL_NOTICE.encode() in seen.replace(b"\r\n", b"\n"), seen
        assert seen.count(b"\n") == 1  # one line
        os.write(master, b"\x03")  # Ctrl-C, through the terminal's line discipline
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            _read_until(master, b"\0", 0.2)
        else:
            pytest.fail("the server ignored Ctrl-C")
        rest = _read_until(master, b"\0", 0.5)
        assert os.waitstatus_to_exitcode(status) == 0
        assert b"Traceback" not in seen + rest
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(master)


def _read_until(fd: int, marker: bytes, timeout: float) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while marker not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        try:
            block = os.read(fd, 4096)
        except OSError:
            break
        if not block:
            break
        out += block
    return out


def test_a_root_whose_own_name_is_not_utf8_is_named_in_display_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    root = os.path.join(os.fsencode(tmp_path), b"proj\xe9")
    os.mkdir(root)
    _, service = build_server(ServeOptions(roots=[os.fsdecode(root)]))
    assert [r.name for r in service.list_roots().roots] == ["proj%E9"]
    service.list_roots().model_dump_json()  # serialisable
    service.journal.close()
