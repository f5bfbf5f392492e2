"""MCP roots from the client narrow the configured roots and can never widen them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.types import ListRootsResult, Root

from safeport.context_server.policy.scope import narrow_scope
from tests.context_server.hostile import server_params
from tests.context_server.listed import listed
from tests.context_server.test_server import small_workspace

pytestmark = pytest.mark.anyio


def test_narrowing_is_an_intersection() -> None:
    configured = ["/srv/app", "/srv/lib"]
    assert narrow_scope(configured, ["/srv/app/src"]) == ("/srv/app/src",)
    assert narrow_scope(configured, ["/srv"]) == ("/srv/app", "/srv/lib")
    assert narrow_scope(configured, ["/"]) == ("/srv/app", "/srv/lib")
    assert narrow_scope(configured, ["/etc"]) == ()
    assert narrow_scope(configured, ["/srv/app-secrets"]) == ()  # a sibling prefix is not inside


async def call_with_roots(
    tmp_path: Path, offered: list[str], calls: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    root, home = small_workspace(tmp_path)

    async def roots_callback(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=uri.format(root=root)) for uri in offered])

    results = []
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        transport = stdio_client(server_params([root], home), errlog=errlog)
        async with Client(transport, list_roots_callback=roots_callback) as client:
            for tool, args in calls:
                results.append(await client.call_tool(tool, args))
    return results


async def test_a_client_root_inside_the_workspace_narrows_every_tool(tmp_path: Path) -> None:
    inside, outside, found, search, feed = await call_with_roots(
        tmp_path,
        ["file://{root}/src"],
        [
            ("read_file", {"path": "src/app.py"}),
            ("read_file", {"path": "notes.md"}),
            ("search_files", {"pattern": "*"}),
            ("search_project", {"query": "zebra"}),
            ("get_recent_changes", {}),
        ],
    )
    assert not inside.is_error
    assert outside.is_error and "outside the served workspace" in outside.content[0].text
    assert found.structured_content["matches"] == ["src/app.py"]
    assert search.structured_content["hits"] == []
    assert [c["path"] for c in feed.structured_content["changes"]] == ["src/app.py"]


async def test_a_client_root_above_the_workspace_does_not_widen_it(tmp_path: Path) -> None:
    notes, passwd = await call_with_roots(
        tmp_path,
        ["file:///"],
        [("read_file", {"path": "notes.md"}), ("read_file", {"path": "/etc/passwd"})],
    )
    assert not notes.is_error
    assert passwd.is_error


async def test_a_client_root_elsewhere_serves_nothing(tmp_path: Path) -> None:
    (app,) = await call_with_roots(
        tmp_path, ["file:///etc"], [("read_file", {"path": "src/app.py"})]
    )
    assert app.is_error and "outside the served workspace" in app.content[0].text


async def test_folders_above_a_client_root_list_with_the_rest_out_of_scope(
    tmp_path: Path,
) -> None:
    (listing,) = await call_with_roots(
        tmp_path, ["file://{root}/src"], [("list_directory", {"path": "."})]
    )
    entries = {n: e["blocked"] for n, e in listed(listing.structured_content).items()}
    assert entries == {"src": "", "notes.md": "out-of-scope", ".env": "private"}
