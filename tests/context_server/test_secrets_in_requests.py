"""A secret a client spells in a request (an agent searching for a token it saw elsewhere, or
naming a file by its secret with a letter written as a %XX escape) is repeated by no result and
kept by no journal: the echoed pattern and query carry the marker, and so do the reads journal
and the audit trail read back from it. Driven through the real server process."""

from __future__ import annotations

import secrets
import string
from pathlib import Path

import anyio
import pytest

from tests.context_server.hostile import connected, result_text, server_params

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server"

pytestmark = pytest.mark.anyio

ALNUM = string.ascii_letters + string.digits


def _tokens() -> tuple[str, str]:
    github = "ghp" + "_" + "".join(secrets.choice(ALNUM) for _ in range(36))
    aws = "AKIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))
    return github, aws


def _pieces(*tokens: str) -> list[str]:
    return [t[i : i + 10] for t in tokens for i in range(4, len(t) - 9, 3)]


async def test_no_result_or_journal_repeats_a_secret_a_client_spelled(tmp_path: Path) -> None:
    github, aws = _tokens()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("nothing to see\n")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    escaped_aws = "%41" + aws[1:]  # `A` written as an escape
    escaped_github = "%67hp" + github[3:]  # `g` likewise
    requests: list[tuple[str, dict[str, object]]] = [
        ("search_files", {"pattern": f"*{github}*"}),
        ("search_files", {"pattern": f"**/{aws}.csv"}),
        ("search_project", {"query": github}),
        ("search_project", {"query": f"key={aws}"}),
        ("search", {"query": f"where is {github}"}),
        ("read_file", {"path": f"n-{escaped_aws}.md"}),
        ("read_file", {"path": f"dump/{escaped_github}"}),
        ("get_file_info", {"path": f"{escaped_aws}/x"}),
        ("read_multiple_files", {"paths": [escaped_github, f"a-{escaped_aws}"]}),
    ]
    pieces = _pieces(github, aws)
    with (tmp_path / "stderr").open("w+") as errlog, anyio.fail_after(120):
        async with connected(server_params([root], home), errlog) as client:
            texts = [result_text(await client.call_tool(t, a)) for t, a in requests]
            trail = await client.call_tool("get_audit_trail", {"limit": 100})
            texts.append(result_text(trail))
            # Ordinary requests are still repeated as sent.
            plain = await client.call_tool("search_files", {"pattern": "*.md"})
            assert plain.structured_content["pattern"] == "*.md"
            assert plain.structured_content["matches"] == ["notes.md"]
            asked = await client.call_tool("search_project", {"query": "nothing to"})
            assert asked.structured_content["query"] == "nothing to"
        errlog.seek(0)
        texts.append(errlog.read())
    assert "[REDACTED:" in texts[0] and "[REDACTED:" in texts[2]
    journals = list(home.rglob("reads.jsonl"))
    assert journals
    texts += [p.read_text() for p in journals]
    for text in texts:
        assert not [p for p in pieces if p in text], text[:300]
