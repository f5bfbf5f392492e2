"""The MCP Inspector CLI (npm) lists and calls the server's tools, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need
from tests.context_server.test_server import small_workspace

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = REPO / "node_modules" / ".bin" / "mcp-inspector"


def inspect_cli(home: Path, root: Path, *method: str) -> subprocess.CompletedProcess[str]:
    need(INSPECTOR.exists(), "the MCP Inspector is not installed (run `npm ci`)")
    argv = [
        str(INSPECTOR),
        "--cli",
        "-e",
        f"SAFEPORT_HOME={home}",
        *method,
        "--",
        sys.executable,
        "-m",
        "safeport.context_server",
        "--root",
        str(root),
        "--origin",
        "inspector",
    ]
    env = {**os.environ, "SAFEPORT_HOME": str(home)}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False, env=env, cwd=root
    )


@pytest.mark.integration
def test_the_inspector_lists_every_tool_with_read_only_annotations(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    done = inspect_cli(home, root, "--method", "tools/list")
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(done.stdout)["tools"]}
    assert {"read_file", "list_directory", "search_project", "search", "fetch"} <= set(tools)
    for tool in tools.values():
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["openWorldHint"] is False
        assert "outputSchema" in tool
        assert not tool["description"].startswith(" ")


@pytest.mark.integration
def test_the_inspector_calls_a_tool_and_sees_a_refusal_as_a_tool_error(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    done = inspect_cli(
        home,
        root,
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=src/app.py",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["structuredContent"]["text"].startswith("def main")
    refused = inspect_cli(
        home, root, "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=.env"
    )
    body = json.loads(refused.stdout)
    assert body["isError"] is True
    assert "private" in body["content"][0]["text"]
    assert "CANARY" not in refused.stdout + refused.stderr
    journal = (home / "audit" / "reads.jsonl").read_text()
    assert '"origin":"inspector"' in journal and '"<private>"' in journal
