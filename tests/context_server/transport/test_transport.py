"""The stdio transport: stray output during a call never reaches the protocol stream, and the
real SDK client still speaks every part of MCP through it (roots, errors, cancellation)."""

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
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import ListRootsResult, Root

from tests.context_server.hostile import result_text
from tests.context_server.listed import names
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.transport"

pytestmark = pytest.mark.anyio

# The server, with workspace operations that behave like a careless library: they print, write
# to fd 1 directly (as C code would) and start a child process that inherits stdout.
NOISY_SERVER = r"""
import os, subprocess, sys
from safeport.context_server.__main__ import main
from safeport.context_server.operations.service import WorkspaceService

def noisy(method):
    def call(self, *args, **kwargs):
        print("STRAY print from a library")
        print("STRAY half a line", end="")
        sys.stdout.flush()
        os.write(1, b"STRAY bytes on fd 1\n")
        subprocess.run(["echo", "STRAY from a child process"], check=False)
        return method(self, *args, **kwargs)
    return call

for name in ("read_file", "list_directory", "search_project", "get_file_info"):
    setattr(WorkspaceService, name, noisy(getattr(WorkspaceService, name)))
sys.exit(main(sys.argv[1:]))
"""


def test_stray_output_during_calls_never_reaches_the_protocol_stream(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "src/app.py"}),  # the first call: through the SDK
        ("read_file", {"path": "src/app.py"}),  # then answered by the transport itself
        ("list_directory", {"path": "."}),
        ("get_file_info", {"path": "notes.md"}),
        ("search_project", {"query": "zebra"}),  # a worker thread, through the SDK
        ("read_file", {"path": ".env"}),
        ("read_file", {"path": "notes.md"}),
    ]
    messages: list[dict[str, Any]] = [
        {
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"method": "notifications/initialized"},
    ]
    messages += [
        {"id": n, "method": "tools/call", "params": {"name": name, "arguments": args}}
        for n, (name, args) in enumerate(calls, 1)
    ]
    env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
    with (tmp_path / "stderr").open("w+") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-c", NOISY_SERVER, "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        killer = threading.Timer(60, proc.kill)  # bounds every read below
        killer.start()
        answers: dict[object, dict[str, Any]] = {}
        try:
            for message in messages:  # one at a time: each call runs while its output flows
                proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
                proc.stdin.flush()
                while "id" in message and message["id"] not in answers:
                    line = proc.stdout.readline()
                    assert line, "the server closed stdout early"
                    frame = json.loads(line)  # every line is one whole JSON-RPC message
                    assert frame["jsonrpc"] == "2.0"
                    answers[frame.get("id")] = frame
            proc.stdin.close()
            rest = proc.stdout.read()
            proc.wait(30)
        finally:
            killer.cancel()
    assert b"STRAY" not in rest
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    results = [answers[n]["result"] for n in range(1, len(calls) + 1)]
    assert [r["isError"] for r in results] == [False] * 5 + [True, False]
    assert "zebra crossing" in results[-1]["structuredContent"]["text"]
    stderr = (tmp_path / "stderr").read_text()
    # The stray output happened, once per noisy call, and went to stderr instead.
    assert stderr.count("STRAY bytes on fd 1") == stderr.count("STRAY from a child process")
    assert stderr.count("STRAY print from a library") == len(calls)  # each reached its operation
    assert "CANARYsmallworkspace" not in stderr


async def test_the_sdk_client_gets_roots_errors_and_cancellation_through_the_transport(
    tmp_path: Path,
) -> None:
    root, home = small_workspace(tmp_path)
    (tmp_path / "proj" / "lib").mkdir()
    (tmp_path / "proj" / "lib" / "util.py").write_text("zebra = 2\n")
    asked: list[bool] = []

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        asked.append(True)
        return ListRootsResult(roots=[Root(uri=(root / "src").as_uri())])

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "safeport.context_server", "--root", str(root)],
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
    )
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(90):
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, list_roots_callback=roots) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"read_file", "list_directory", "search_project"} <= tools
            first = await client.call_tool("read_file", {"path": "src/app.py"})
            assert not first.is_error and asked == [True]
            # The client's roots narrowed the scope, for the calls answered directly too.
            outside = await client.call_tool("read_file", {"path": "lib/util.py"})
            assert outside.is_error and "outside the served workspace" in result_text(outside)
            again = await client.call_tool("read_file", {"path": "src/app.py"})
            assert again.structured_content == first.structured_content
            wrong = await client.call_tool("list_directory", {"path": "src", "limit": "many"})
            assert wrong.is_error
            # A call cancelled by the client leaves the session usable.
            with anyio.move_on_after(0.001):
                await client.call_tool("search_project", {"query": "zebra"})
            listing = await client.call_tool("list_directory", {"path": "src"})
            assert names(listing.structured_content) == ["app.py"]
            health = await client.call_tool("get_health", {})
            assert health.structured_content["status"] == "ok"
            resources = await client.read_resource("safeport://policy")
            assert resources.contents
    assert asked == [True]  # asked once per server, reused by every later call


def test_requests_from_a_file_and_answers_to_a_file_are_whole_frames(tmp_path: Path) -> None:
    # Regular files cannot be polled: the transport reads them on a thread and writes them
    # with plain writes.
    root, home = small_workspace(tmp_path)
    hello = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "file", "version": "0"},
    }
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}) + "\n"
    )
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", NOISY_SERVER, "--root", str(root)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    frames = [json.loads(line) for line in answers.read_bytes().splitlines()]
    assert [f["id"] for f in frames] == [0]
    assert frames[0]["result"]["serverInfo"]["name"] == "safeport-context"
