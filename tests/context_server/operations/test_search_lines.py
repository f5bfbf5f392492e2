"""A search hit's line is the line `read_file_excerpt` starts at that number: both count lines
as the excerpt reader does (only "\\n" ends one), whatever else the file holds."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.context_server.hostile import connected, server_params

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.operations"

pytestmark = pytest.mark.anyio

# Characters `str.splitlines` breaks at although no parser here does; each file puts some of
# them before the line that holds the needle, so a split at any of them moves the number.
BREAKERS = {
    "cr.txt": "one\rtwo\r\nthree\n",
    "nel.txt": "one\x85two\nthree\n",
    "ls.txt": "one\u2028two\u2029three\n",
    "ff.txt": "one\x0ctwo\x0bthree\x1cfour\x1dfive\x1esix\n",
    "mixed.txt": "a\r\u2028\x85\x0c\rb\nc\u2028d\n",
}


@pytest.mark.parametrize("needle", ["zq", "zebraquill"])  # a scan, and the index when ready
async def test_search_hits_and_excerpts_number_lines_alike(tmp_path: Path, needle: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    for name, head in BREAKERS.items():
        (root / name).write_bytes((head + f"before {needle} after\n").encode("utf-8"))
    (root / "plain.txt").write_text(f"first\nsecond\n{needle}\n")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(60):
        async with connected(server_params([root], home), errlog) as client:
            found = await client.call_tool("search_project", {"query": needle, "limit": 50})
            hits = found.structured_content["hits"]
            assert {hit["path"] for hit in hits} == {*BREAKERS, "plain.txt"}, hits
            for hit in hits:
                shown = await client.call_tool(
                    "read_file_excerpt", {"path": hit["path"], "start_line": hit["line"]}
                )
                first = shown.structured_content["lines"][0]
                assert needle in first, (hit, first)
                assert hit["snippet"] in first, (hit, first)
            by_path = {hit["path"]: hit["line"] for hit in hits}
            assert by_path["plain.txt"] == 3
            assert by_path["cr.txt"] == 3 and by_path["ls.txt"] == 2 and by_path["nel.txt"] == 3
            assert by_path["ff.txt"] == 2 and by_path["mixed.txt"] == 3
