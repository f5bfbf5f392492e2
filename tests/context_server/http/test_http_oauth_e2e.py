"""End to end: the MCP SDK's own Streamable HTTP client with its own OAuth client provider,
against `sp context serve --http` and the real gateway as the authorization server. The test
plays the browser and answers the card through `sp approvals`, then the client lists tools,
reads a file and searches; the journal names the client for each read; revoking the client
stops it at its next request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.http.remote_flow import (
    Browser,
    MemoryTokens,
    provider,
    read_remotely,
)
from tests.context_server.http.served import HttpServer, http_server
from tests.context_server.test_server import small_workspace

CANARY = "CANARYsmallworkspace"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gw")
    home.chmod(0o700)
    with real_gateway(home):
        yield home


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with http_server(home, root, client=True) as running:
        yield running


def reads_journal(home: Path) -> list[dict[str, object]]:
    path = home / "audit" / "reads.jsonl"
    return [json.loads(line)["body"] for line in path.read_text().splitlines() if line]


def test_dynamic_registration_then_read_and_search_with_the_client_journaled(
    home: Path, server: HttpServer
) -> None:
    browser = Browser(home)
    storage = MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    assert {"read_file", "search", "fetch", "list_roots"} <= set(session.tools)
    assert session.read["text"] == "zebra crossing\n"
    assert session.search["results"][0]["id"] == "notes.md"
    assert browser.seen_codes and browser.seen_codes[0] in json.dumps(browser.cards[0])
    records = [r for r in reads_journal(home) if r.get("tool") == "read_file"]
    assert records and all(r["client"]["name"] == "Test remote client" for r in records)
    assert CANARY not in server.log() + (home / "gateway.stderr").read_text()
