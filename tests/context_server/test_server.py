"""The real server over stdio: bad input, origin labels, stdout purity, roots, the change feed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from safeport.shared.audit import verify_journal
from tests.context_server.hostile import connected, result_text, server_params
from tests.context_server.listed import listed

pytestmark = pytest.mark.anyio

CRASH = "Error executing tool"


def small_workspace(base: Path) -> tuple[Path, Path]:
    root = base / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "notes.md").write_text("zebra crossing\n")
    (root / ".env").write_text("TOKEN=CANARYsmallworkspace\n")
    home = base / "home"
    home.mkdir(mode=0o700)
    return root, home


BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": ""}),
    ("read_file", {"path": "src/app.py\x00"}),
    ("read_file", {"path": "a" * 10_000}),
    ("read_file", {"path": "a/" * 5_000}),
    ("read_file", {"path": "/etc/passwd"}),
    ("read_file", {"path": "../proj/src/app.py"}),
    ("read_file", {"path": "C:\\Windows\\win.ini"}),
    ("read_file", {"path": "\\\\server\\share\\x"}),
    ("read_file", {"path": "src\\app.py"}),
    ("read_file", {"path": 123}),
    ("read_file", {"path": None}),
    ("read_file", {}),
    ("list_directory", {"path": ".", "limit": 10**12}),
    ("list_directory", {"path": ".", "limit": -5}),
    ("list_directory", {"path": ".", "limit": 0}),
    ("list_directory", {"path": ".", "cursor": "garbage"}),
    ("list_directory", {"path": ".", "cursor": "o1.0.-1"}),
    ("list_directory", {"path": ".", "cursor": "o1.0.999999999"}),
    ("list_directory", {"path": ".", "cursor": "x" * 10_000}),
    ("directory_tree", {"path": ".", "max_depth": -1, "max_entries": -1}),
    ("directory_tree", {"path": ".", "max_depth": 10**9, "max_entries": 10**12}),
    ("read_file_excerpt", {"path": "src/app.py", "start_line": -10, "max_lines": -1}),
    ("read_file_excerpt", {"path": "src/app.py", "start_line": 10**12, "max_lines": 10**9}),
    ("read_file_excerpt", {"path": "src/app.py", "start_column": -1}),
    ("read_file_excerpt", {"path": "src/app.py", "start_column": 10**12}),
    ("search_project", {"query": ""}),
    ("search_project", {"query": "   "}),
    ("search_project", {"query": "a\x00b"}),
    ("search_project", {"query": "a" * 100_000}),
    ("search_project", {"query": "main", "limit": -1}),
    ("search_project", {"query": "main", "limit": 10**9}),
    ("search_project", {"query": "main", "cursor": "bad"}),
    ("search_project", {"query": "main", "cursor": "q1.i.99.0"}),
    ("search_project", {"query": "ma", "cursor": "q1.i.0.0"}),
    ("search_project", {"query": '"); DROP TABLE files; --'}),
    ("search_project", {"query": "NEAR(a b) OR *"}),
    ("search_files", {"pattern": ""}),
    ("search_files", {"pattern": "["}),
    ("search_files", {"pattern": "*" * 1000}),
    ("get_recent_changes", {"cursor": "bad"}),
    ("get_recent_changes", {"cursor": "c1.0123456789abcdef.5"}),
    ("get_recent_changes", {"cursor": "c1.0123456789abcdef.99999999999999"}),
    ("get_recent_changes", {"limit": -1}),
    ("get_recent_changes", {"limit": 10**12}),
    ("read_multiple_files", {"paths": []}),
    ("read_multiple_files", {"paths": ["src/app.py"] * 1000}),
    ("get_audit_trail", {"limit": -1}),
    ("get_audit_trail", {"limit": 10**12}),
    ("fetch", {"id": ""}),
    ("fetch", {"id": "safeport://workspace/file/../x"}),
    ("fetch", {"id": "safeport://workspace/file/%2e%2e/x"}),
    ("fetch", {"id": "safeport://workspace/file/%2Fetc%2Fpasswd"}),
    ("no_such_tool", {}),
]


async def test_bad_input_gets_a_clear_error_or_a_clamped_value_and_never_a_crash(
    tmp_path: Path,
) -> None:
    root, home = small_workspace(tmp_path)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            for tool, args in BAD_CALLS:
                with anyio.fail_after(15):
                    result = await client.call_tool(tool, args)
                text = result_text(result)
                assert text.strip() != f"{CRASH} {tool}", (tool, args)
                assert str(tmp_path) not in text, (tool, text)
                if result.is_error:
                    assert text.strip() and not text.startswith("Traceback"), (tool, text)
            # Clamped values are honoured, not refused.
            page = await client.call_tool("list_directory", {"path": ".", "limit": 10**12})
            assert not page.is_error
            feed = await client.call_tool("get_recent_changes", {"cursor": "c1.0123456789abcdef.5"})
            assert feed.structured_content["reset"] is True
            # Still healthy afterwards.
            health = await client.call_tool("get_health", {})
            assert not health.is_error


async def test_origin_is_a_label_and_never_changes_a_decision(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    calls = [
        ("read_file", {"path": "src/app.py"}),
        ("read_file", {"path": ".env"}),
        ("list_directory", {"path": "."}),
        ("read_file", {"path": "/etc/passwd"}),
        ("search_project", {"query": "zebra"}),
        ("get_file_info", {"path": ".env"}),
    ]
    outcomes: dict[str, list[tuple[bool, str]]] = {}
    for origin in ("unknown-client", "trusted-admin-root"):
        with (tmp_path / f"stderr-{origin}").open("w+") as errlog, anyio.fail_after(60):
            params = server_params([root], home, "--origin", origin)
            async with connected(params, errlog) as client:
                seen = []
                for tool, args in calls:
                    result = await client.call_tool(tool, args)
                    body = result.structured_content or {}
                    # How a search was answered (index or scan) depends on whether the
                    # background index has finished; what it answered must not differ.
                    stable = {k: v for k, v in body.items() if k not in ("index_state", "method")}
                    seen.append(
                        (
                            result.is_error,
                            json.dumps(stable, sort_keys=True) if body else result_text(result),
                        )
                    )
                outcomes[origin] = seen
    assert outcomes["unknown-client"] == outcomes["trusted-admin-root"]
    journal = home / "audit" / "reads.jsonl"
    origins = {json.loads(line)["body"]["origin"] for line in journal.read_text().splitlines()}
    assert origins == {"unknown-client", "trusted-admin-root"}
    assert verify_journal(journal).ok


def test_stdout_carries_only_json_rpc(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": ".env"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "src/app.py"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "search_project", "arguments": {"query": "zebra"}},
        },
    ]
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    errlog = (tmp_path / "stderr").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "safeport.context_server", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    killer = threading.Timer(60, proc.kill)  # bounds every read below
    killer.start()
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        ids: set[object] = set()
        lines = []
        while not {1, 2, 3, 4, 5} <= ids:
            line = proc.stdout.readline()
            assert line, "the server closed stdout early"
            lines.append(line)
            message = json.loads(line)  # every line is one JSON-RPC message
            assert message["jsonrpc"] == "2.0"
            ids.add(message.get("id"))
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(30)
    finally:
        killer.cancel()
        errlog.close()
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    stderr = (tmp_path / "stderr").read_text()
    assert "CANARYsmallworkspace" not in "".join(lines) + rest + stderr


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "safeport.context_server"],
        [sys.executable, "-m", "safeport", "context", "serve"],
    ],
)
def test_without_a_root_the_server_refuses_to_start(tmp_path: Path, argv: list[str]) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    done = subprocess.run(
        argv,
        input="",
        capture_output=True,
        text=True,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no workspace root is configured" in done.stderr
    assert "--root" in done.stderr
    assert done.stdout == ""


async def test_roots_can_come_from_context_toml(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    (home / "context.toml").write_text(f'roots = ["{root}"]\n')
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([], home), errlog) as client:
            result = await client.call_tool("read_file", {"path": "src/app.py"})
            assert not result.is_error


async def test_safeport_folders_inside_a_root_are_private(tmp_path: Path) -> None:
    root, _ = small_workspace(tmp_path)
    home = root / ".safeport-state"
    home.mkdir(mode=0o700)
    (home / "vault.sp").write_text("CANARYvaultinsideroot\n")
    (home / "gateway.toml").write_text("# CANARYgatewayinsideroot\n")
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([root], home), errlog) as client:
            listing = await client.call_tool("list_directory", {"path": "."})
            entries = listed(listing.structured_content)
            assert entries[".safeport-state"]["blocked"] == "private"
            for path in (".safeport-state/vault.sp", ".safeport-state/gateway.toml"):
                result = await client.call_tool("read_file", {"path": path})
                assert result.is_error and "private" in result_text(result)
            inside = await client.call_tool("list_directory", {"path": ".safeport-state"})
            assert inside.is_error
            found = await client.call_tool("search_project", {"query": "CANARY"})
            assert "CANARYvault" not in json.dumps(found.structured_content)
            await client.call_tool("search_files", {"pattern": "*"})
            # The journal written inside the root is never served either.
            trail = await client.call_tool(
                "read_file", {"path": ".safeport-state/audit/reads.jsonl"}
            )
            assert trail.is_error


async def test_the_change_feed_follows_edits_with_an_instance_bound_cursor(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([root], home), errlog) as client:
            first = (await client.call_tool("get_recent_changes", {})).structured_content
            paths = [c["path"] for c in first["changes"]]
            assert set(paths) == {"src/app.py", "notes.md"}  # never .env
            await anyio.sleep(1.1)  # the feed rescans at most once a second
            (root / "src" / "new.py").write_text("x = 1\n")
            (root / "notes.md").write_text("zebra crossing, moved\n")
            (root / ".env.local").write_text("SECRET=CANARYfeed\n")
            (root / "src" / "app.py").unlink()
            page = (
                await client.call_tool("get_recent_changes", {"cursor": first["cursor"]})
            ).structured_content
            kinds = {(c["kind"], c["path"]) for c in page["changes"]}
            assert kinds == {
                ("added", "src/new.py"),
                ("modified", "notes.md"),
                ("removed", "src/app.py"),
            }
            again = (
                await client.call_tool("get_recent_changes", {"cursor": page["cursor"]})
            ).structured_content
            assert again["changes"] == []
            bad = await client.call_tool("get_recent_changes", {"cursor": "c1.nothex.1"})
            assert bad.is_error and "cursor" in result_text(bad)
