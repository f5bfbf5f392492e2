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

from harness.gateway import POLICY, Gateway
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
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    home = tmp_path_factory.mktemp("gw")
    gw = Gateway(home)
    gw.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 60"))
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


@pytest.fixture(scope="module")
def server(gateway: Gateway) -> Iterator[HttpServer]:
    root, _ = small_workspace(gateway.home / "ws")
    with http_server(gateway.home, root) as running:
        yield running


def reads_journal(home: Path) -> list[dict[str, object]]:
    path = home / "audit" / "reads.jsonl"
    return [json.loads(line)["body"] for line in path.read_text().splitlines() if line]


def test_dynamic_registration_then_read_and_search_with_the_client_journaled(
    gateway: Gateway, server: HttpServer
) -> None:
    browser = Browser(gateway.home)
    storage = MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    assert {"read_file", "search", "fetch", "list_roots"} <= set(session.tools)
    assert session.read["text"] == "zebra crossing\n"
    assert session.search["results"][0]["id"] == "notes.md"
    assert browser.seen_codes and browser.seen_codes[0] in json.dumps(browser.cards[0])
    records = [r for r in reads_journal(gateway.home) if r.get("tool") == "read_file"]
    assert records and all(r["client"]["name"] == "Test remote client" for r in records)
    assert CANARY not in server.log() + gateway.stderr_path.read_text()
