"""The transport's own answers for the bounded tools: the SDK's answers, byte for meaning, and
only where the session and the call leave nothing to doubt; everything else goes to the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from safeport.context_server import ServeOptions, build_server
from safeport.context_server.tools.journaled_calls import JournaledServer
from safeport.context_server.transport.fast_path import DirectCalls
from safeport.shared.audit import verify_journal

pytestmark = pytest.mark.anyio


def serve_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[JournaledServer, Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 'héron'\n")
    (root / ".env").write_text("TOKEN=CANARYdirect\n")
    server, _ = build_server(ServeOptions(roots=[str(root)]))
    return server, home


def initialised(server: JournaledServer, version: str = "2025-06-18") -> DirectCalls:
    direct = DirectCalls(server)
    direct.observe_request(
        types.JSONRPCRequest.model_validate({"jsonrpc": "2.0", "id": 0, "method": "initialize"})
    )
    answer = {"protocolVersion": version, "capabilities": {}, "serverInfo": {}}
    direct.observe_answer(types.JSONRPCResponse(jsonrpc="2.0", id=0, result=answer))
    return direct


def call(request_id: object, name: str, arguments: object, **extra: object) -> dict[str, Any]:
    params: dict[str, object] = {"name": name, "arguments": arguments, **extra}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_direct_answers_are_the_sdk_answers_for_results_and_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, home = serve_small(tmp_path, monkeypatch)
    direct = initialised(server)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "src/app.py"}),
        ("list_directory", {"path": "."}),
        ("get_file_info", {"path": "src/app.py"}),
        ("read_file_excerpt", {"path": "src/app.py", "start_line": 2}),
        ("read_file", {"path": ".env"}),  # refused: private
        ("read_file", {"path": "missing.py"}),
        ("list_roots", {}),
    ]
    with anyio.fail_after(30):
        async with Client(server) as client:
            for number, (name, args) in enumerate(cases, 1):
                sdk = await client.call_tool(name, args)
                frame = await direct.answer(call(number, name, args))
                assert frame is not None and frame.endswith(b"\n") and frame.count(b"\n") == 1
                message = json.loads(frame)
                assert message["jsonrpc"] == "2.0" and message["id"] == number
                ours = message["result"]
                assert ours["isError"] is sdk.is_error, (name, args)
                assert [c["text"] for c in ours["content"]] == [
                    getattr(c, "text", None) for c in sdk.content
                ]
                if not sdk.is_error:
                    assert ours["structuredContent"] == sdk.structured_content
                    # The text copy is the structured content, serialised once.
                    assert json.loads(ours["content"][0]["text"]) == ours["structuredContent"]
                else:
                    assert "structuredContent" not in ours
    server.service.journal.close()
    journal = home / "audit" / "reads.jsonl"
    records = [json.loads(line)["body"] for line in journal.read_text().splitlines()]
    # Each call once through the SDK and once here: two records each, in order.
    assert [r["tool"] for r in records] == [name for name, _ in cases for _ in (1, 2)]
    assert "CANARYdirect" not in journal.read_text() and verify_journal(journal).ok


async def test_calls_the_sdk_must_handle_are_left_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = serve_small(tmp_path, monkeypatch)
    plain = call(1, "read_file", {"path": "src/app.py"})
    # Before any initialize, and before a first call has applied the client's roots.
    assert await DirectCalls(server).answer(plain) is None
    assert await initialised(server).answer(plain) is None
    async with Client(server) as client:
        await client.call_tool("list_roots", {})
    # A protocol version whose results these frames do not reproduce.
    for version in ("2024-11-05", "2025-03-26", "2026-07-28"):
        assert await initialised(server, version).answer(plain) is None
    direct = initialised(server)
    assert await direct.answer(plain) is not None  # the legitimate call is answered here
    left_to_the_sdk: list[object] = [
        call(2, "read_file", {"path": 5}),  # fails validation: the SDK's own sentence
        call(3, "read_file", {}),
        call(4, "read_file", "src/app.py"),
        call(5, "read_file", {"path": "src/app.py", "roots": []}),
        call(6, "search_project", {"query": "main"}),  # not bounded: a worker thread
        call(7, "no_such_tool", {}),
        call(True, "read_file", {"path": "src/app.py"}),
        call(8.0, "read_file", {"path": "src/app.py"}),
        call(None, "read_file", {"path": "src/app.py"}),
        call(9, "read_file", {"path": "src/app.py"}, task={"ttl": 1000}),
        call(10, "read_file", {"path": "src/app.py"}, _meta={"progressToken": True}),
        {**call(11, "read_file", {"path": "src/app.py"}), "extra": 1},
        {**call(12, "read_file", {"path": "src/app.py"}), "jsonrpc": "1.0"},
        {"jsonrpc": "2.0", "id": 13, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "read_file"}},
        [call(14, "read_file", {"path": "src/app.py"})],
        "read_file",
    ]
    for message in left_to_the_sdk:
        assert await direct.answer(message) is None, message
    labelled = call(15, "read_file", {"path": "src/app.py"}, _meta={"client/label": "x"})
    assert await direct.answer(labelled) is not None
    server.service.journal.close()


MODERN_META: dict[str, object] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern(server: JournaledServer) -> DirectCalls:
    """A connection opened by a 2026-era request (no handshake), as the SDK client opens it."""
    direct = DirectCalls(server)
    discover = {"jsonrpc": "2.0", "id": 0, "method": "server/discover"}
    direct.observe_request(
        types.JSONRPCRequest.model_validate({**discover, "params": {"_meta": MODERN_META}})
    )
    return direct


async def test_direct_answers_on_the_2026_protocol_are_the_sdk_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = serve_small(tmp_path, monkeypatch)
    direct = modern(server)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "src/app.py"}),
        ("list_directory", {"path": "."}),
        ("read_file", {"path": ".env"}),  # refused: private
        ("read_file", {"path": "missing.py"}),
    ]
    with anyio.fail_after(30):
        async with Client(server) as client:
            for number, (name, args) in enumerate(cases, 1):
                sdk = await client.call_tool(name, args)
                frame = await direct.answer(call(number, name, args, _meta=MODERN_META))
                assert frame is not None, (name, args)
                message = json.loads(frame)
                assert message["id"] == number
                ours = types.CallToolResult.model_validate(message["result"])
                # The members the SDK adds on this era, and the result itself, are the SDK's.
                assert message["result"]["resultType"] == "complete"
                assert ours.meta == sdk.meta and ours.meta is not None
                assert ours.is_error is sdk.is_error
                assert ours.structured_content == sdk.structured_content
                assert [getattr(c, "text", None) for c in ours.content] == [
                    getattr(c, "text", None) for c in sdk.content
                ]
    server.service.journal.close()


async def test_the_2026_protocol_leaves_to_the_sdk_what_its_ladder_or_era_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = serve_small(tmp_path, monkeypatch)
    async with Client(server) as client:
        await client.call_tool("list_roots", {})
    plain = call(1, "read_file", {"path": "src/app.py"}, _meta=MODERN_META)
    # Before the connection's first request has decided its era.
    assert await DirectCalls(server).answer(plain) is None
    direct = modern(server)
    assert await direct.answer(plain) is not None  # the legitimate call is answered here
    version = "io.modelcontextprotocol/protocolVersion"
    capabilities = "io.modelcontextprotocol/clientCapabilities"
    info = "io.modelcontextprotocol/clientInfo"
    left_to_the_sdk: list[dict[str, Any]] = [
        call(2, "read_file", {"path": "src/app.py"}),  # no envelope on a 2026 connection
        call(3, "read_file", {"path": "src/app.py"}, _meta={**MODERN_META, version: "2099-01-01"}),
        call(4, "read_file", {"path": "src/app.py"}, _meta={**MODERN_META, version: 20260728}),
        call(5, "read_file", {"path": "src/app.py"}, _meta={version: "2026-07-28"}),
        call(
            6,
            "read_file",
            {"path": "src/app.py"},
            _meta={**MODERN_META, "io.modelcontextprotocol/logLevel": "debug"},
        ),
        call(7, "read_file", {"path": 5}, _meta=MODERN_META),
        call(8, "search_project", {"query": "main"}, _meta=MODERN_META),
        call(9, "read_file", {"path": "src/app.py"}, _meta={**MODERN_META, capabilities: None}),
        call(10, "read_file", {"path": "src/app.py"}, _meta={**MODERN_META, info: "me"}),
        # Shaped as the classifier wants, but not as the request's schema for the version
        # types them: the SDK answers INVALID_PARAMS.
        call(11, "read_file", {"path": "src/app.py"}, _meta={**MODERN_META, info: {}}),
        call(
            12,
            "read_file",
            {"path": "src/app.py"},
            _meta={**MODERN_META, capabilities: {"roots": 5}},
        ),
    ]
    for message in left_to_the_sdk:
        assert await direct.answer(message) is None, message
    # The era is the first request's: a later envelope does not turn a handshake connection
    # into a 2026 one, and the SDK refuses an envelope there.
    legacy = initialised(server)
    legacy.observe_request(
        types.JSONRPCRequest.model_validate(
            {"jsonrpc": "2.0", "id": 20, "method": "server/discover"}
        )
    )
    assert await legacy.answer(plain) is None
    assert await legacy.answer(call(21, "read_file", {"path": "src/app.py"})) is not None
    # A client that opens with `initialize` carrying an envelope is still on the handshake.
    stamped = DirectCalls(server)
    stamped.observe_request(
        types.JSONRPCRequest.model_validate({**call(0, "x", {}), "method": "initialize"})
    )
    assert await stamped.answer(plain) is None
    server.service.journal.close()


def test_a_first_line_the_sdk_does_not_take_for_a_request_decides_no_era(tmp_path: Path) -> None:
    """An enveloped line the SDK's parser refuses (here ``jsonrpc`` 1.0) is no request to it:
    the handshake that follows opens a handshake connection, where the SDK refuses every
    enveloped call, and the transport must not answer one either."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("zebra\n")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    hello = {
        "jsonrpc": "2.0",
        "id": "hello",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "safeport.context_server", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
    )
    assert proc.stdin is not None and proc.stdout is not None
    killer = threading.Timer(60, proc.kill)  # bounds every read below
    killer.start()

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        if "id" not in message:
            return {}
        answer: dict[str, Any] = json.loads(proc.stdout.readline())
        return answer

    try:
        proc.stdin.write(
            json.dumps(
                {
                    "jsonrpc": "1.0",
                    "id": 0,
                    "method": "tools/list",
                    "params": {"_meta": MODERN_META},
                }
            ).encode()
            + b"\n"
        )
        assert "result" in ask(hello)
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        first = ask(call(1, "read_file", {"path": "notes.md"}))  # applies the roots
        assert first["result"]["isError"] is False
        for number, path in ((2, "notes.md"), (3, ".env")):
            enveloped = ask(call(number, "read_file", {"path": path}, _meta=MODERN_META))
            assert enveloped["id"] == number
            assert enveloped.get("error", {}).get("code") == types.INVALID_REQUEST, enveloped
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        killer.cancel()
        proc.kill()
