"""Direct answers follow the session's version: a second ``initialize`` hands every call to the
SDK until its answer says which version the session is on now."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.context_server.transport.test_direct import call, initialised, serve_small

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.transport"

pytestmark = pytest.mark.anyio


async def test_a_second_initialize_hands_calls_to_the_sdk_until_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = serve_small(tmp_path, monkeypatch)
    direct = initialised(server)
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("read_file", {"path": "src/app.py"})  # applies the roots
            read = call(1, "read_file", {"path": "src/app.py"})
            assert await direct.answer(read) is not None
            direct.observe_request(
                types.JSONRPCRequest.model_validate(
                    {"jsonrpc": "2.0", "id": 9, "method": "initialize"}
                )
            )
            assert await direct.answer(read) is None  # the SDK may be on another version now
            older = {"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {}}
            direct.observe_answer(types.JSONRPCResponse(jsonrpc="2.0", id=9, result=older))
            assert await direct.answer(read) is None
            direct.observe_request(
                types.JSONRPCRequest.model_validate(
                    {"jsonrpc": "2.0", "id": 10, "method": "initialize"}
                )
            )
            newer = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}
            direct.observe_answer(types.JSONRPCResponse(jsonrpc="2.0", id=10, result=newer))
            assert await direct.answer(read) is not None  # a version answered here again
    server.service.journal.close()
