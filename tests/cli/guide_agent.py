"""A minimal MCP client process for the guide walks: it starts one server as a client does
(argv[1]: its command, args, env and cwd as JSON), then for each JSON line on stdin
(`{"tool": …, "arguments": …}`) calls that tool and prints `{"text": …, "error": …}`."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


async def serve(launch: dict[str, Any]) -> None:
    params = StdioServerParameters(
        command=launch["command"], args=launch["args"], env=launch["env"], cwd=launch["cwd"]
    )
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog),
                          read_timeout_seconds=150) as client:  # fmt: skip
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                call = json.loads(line)
                done = await client.call_tool(call["tool"], call["arguments"])
                text = "".join(getattr(part, "text", "") for part in done.content)
                print(json.dumps({"text": text, "error": bool(done.is_error)}), flush=True)


if __name__ == "__main__":
    anyio.run(serve, json.loads(sys.argv[1]))
