"""The MCP SDK's private surface: one module, checked at import, pinned to the version it was
written against."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from safeport.context_server import sdk_seam
from safeport.context_server.sdk_seam import (
    PIN,
    SERVER_SURFACE,
    TOOL_SURFACE,
    WRITTEN_AGAINST,
    SdkSeamBroken,
    find_tool,
    installed_sdk_version,
    missing_attributes,
    require_surface,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_sdk_has_every_attribute_the_seam_relies_on() -> None:
    async def probe() -> str:
        return ""

    server: MCPServer[Any] = MCPServer(name="seam-test")
    server.add_tool(probe, name="probe")
    assert missing_attributes(server, SERVER_SURFACE) == []
    assert missing_attributes(find_tool(server, "probe"), TOOL_SURFACE) == []
    assert installed_sdk_version().startswith(WRITTEN_AGAINST + ".")


def test_the_dependency_pin_is_the_minor_version_the_seam_was_written_against() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert PIN == "mcp>=2.3,<2.4"
    assert [d for d in project["dependencies"] if d.startswith("mcp")] == [PIN]


def test_a_server_lacking_an_attribute_fails_the_check_naming_the_installed_version() -> None:
    # A stand-in for a later SDK: the tool manager has lost call_tool, the bus is gone.
    later = SimpleNamespace(
        _tool_manager=SimpleNamespace(get_tool=None),
        _lowlevel_server=SimpleNamespace(
            run=None, create_initialization_options=None, middleware=[], server_info_stamp={}
        ),
    )
    assert missing_attributes(later, SERVER_SURFACE) == [
        "_tool_manager.call_tool",
        "_subscriptions",
    ]
    with pytest.raises(SdkSeamBroken) as raised:
        require_surface(later, SERVER_SURFACE, "2.4.0")
    message = str(raised.value)
    assert "the installed mcp 2.4.0 has no" in message
    assert "SimpleNamespace._tool_manager.call_tool, SimpleNamespace._subscriptions" in message
    assert "written against mcp 2.3.x" in message and "install mcp>=2.3,<2.4" in message


def test_a_complete_stand_in_passes_the_check() -> None:
    complete = SimpleNamespace(fn=None, resolved_params={}, fn_metadata=SimpleNamespace())
    assert missing_attributes(complete, TOOL_SURFACE) == [
        "fn_metadata.validate_arguments",
        "fn_metadata.convert_result",
    ]
    complete.fn_metadata = SimpleNamespace(validate_arguments=None, convert_result=None)
    require_surface(complete, TOOL_SURFACE, "2.3.0")  # no error


def test_importing_the_seam_fails_loudly_when_the_sdk_no_longer_sets_an_attribute() -> None:
    # The import-time check itself, against an SDK whose servers lack `_lowlevel_server` (the
    # attribute removed after the SDK's own constructor ran, in a separate interpreter).
    script = (
        "import mcp.server.mcpserver.server as sdk\n"
        "original = sdk.MCPServer.__init__\n"
        "def init(self, *args, **kwargs):\n"
        "    original(self, *args, **kwargs)\n"
        "    del self._lowlevel_server\n"
        "sdk.MCPServer.__init__ = init\n"
        "import safeport.context_server.sdk_seam\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("safeport.context_server.sdk_seam.SdkSeamBroken: the installed mcp ")
    assert f"mcp {installed_sdk_version()} has no MCPServer._lowlevel_server.run" in last


def test_the_seam_imports_only_the_sdk() -> None:
    # A leaf: it may sit below every room that speaks MCP.
    source = Path(sdk_seam.__file__).read_text(encoding="utf-8")
    assert "import safeport" not in source and "from safeport" not in source
