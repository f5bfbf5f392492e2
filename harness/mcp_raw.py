"""A bare JSON-RPC client of one context server process over stdio (no SDK, no validation)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class ServerError(RuntimeError):
    """A JSON-RPC error, a tool error, or a server that went away."""


class RawMcp:
    """A bare JSON-RPC client of one context server process over stdio."""

    def __init__(self, root: Path, home: Path) -> None:
        env = {"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "safeport.context_server", "--root", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._id = 0
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "m", "version": "0"},
        }
        self.request("initialize", hello)
        self._send({"method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"id": self._id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise ServerError("the server closed its output")
            message = json.loads(line)
            if message.get("id") == self._id:
                if "error" in message:
                    raise ServerError(f"{method}: {message['error']}")
                return dict(message["result"])

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise ServerError(f"{name} failed: {result.get('content')}")
        return result

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.call("get_health", {})["structuredContent"]["index_state"] == "ready":
                return
            time.sleep(0.2)
        raise ServerError("the index never became ready")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)
