"""End to end: the MCP SDK's own Streamable HTTP client with its own OAuth client provider,
against `sp context serve --http` and the real gateway as the authorization server. The test
plays the browser and answers the card through `sp approvals`, then the client lists tools,
reads a file and searches; the journal names the client for each read; revoking the client
stops it at its next request."""

from __future__ import annotations

import json
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest

from harness.http_context import HttpServer, free_port, http_server
from harness.real_nginx import nginx_installed, running_nginx
from harness.remote_flow import (
    Browser,
    MemoryTokens,
    journal_text,
    provider,
    read_remotely,
    sp,
)
from tests.conftest import need
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.test_inspector import INSPECTOR
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

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


def reads_journal(home: Path) -> list[dict[str, Any]]:
    path = home / "audit" / "reads.jsonl"
    return [json.loads(line)["body"] for line in path.read_text().splitlines() if line]


@pytest.fixture(scope="module")
def approved(home: Path, server: HttpServer) -> tuple[Browser, MemoryTokens]:
    """A client that went through the flow once (module-wide: one card for these tests)."""
    browser, storage = Browser(home), MemoryTokens()
    session = anyio.run(
        read_remotely,
        server.url + "/mcp",
        provider(server.url + "/mcp", browser, storage),
        "legacy",
    )
    assert session.read["text"] == "zebra crossing\n"
    return browser, storage


def access_token(storage: MemoryTokens) -> str:
    assert storage.tokens is not None
    return storage.tokens.access_token


def test_dynamic_registration_then_read_and_search_with_the_client_journaled(
    home: Path, server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    browser, storage = approved
    auth = provider(server.url + "/mcp", browser, storage)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    assert {"read_file", "search", "fetch", "list_roots"} <= set(session.tools)
    assert session.read["text"] == "zebra crossing\n"
    assert session.search["results"][0]["id"] == "notes.md"
    # One card, whose code the page showed; the second session reused the tokens.
    assert len(browser.cards) == 1 and browser.seen_codes[0] in json.dumps(browser.cards[0])
    journal_text(home, '"tool":"search"')  # the last call's record is written
    records = [r for r in reads_journal(home) if r.get("tool") == "read_file"]
    assert records and all(r["client"]["name"] == "Test remote client" for r in records)
    assert CANARY not in server.log() + (home / "gateway.stderr").read_text()
    for journal in (home / "audit").iterdir():
        assert CANARY.encode() not in journal.read_bytes()


def test_search_and_fetch_answer_as_deep_research_expects(
    server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    browser, storage = approved
    auth = provider(server.url + "/mcp", browser, storage)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "auto")
    for name, (structured, text, schema) in session.deep_research.items():
        assert schema is not None and schema["type"] == "object", name
        assert structured == text, name  # one text item carrying the same JSON
    assert session.deep_research["fetch"][0]["text"] == "zebra crossing\n"


def test_the_2026_protocol_client_reads_with_the_same_tokens(
    server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    browser, storage = approved
    auth = provider(server.url + "/mcp", browser, storage)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "auto")
    assert session.read["text"] == "zebra crossing\n"
    assert session.search["results"][0]["id"] == "notes.md"
    assert len(browser.cards) == 1  # no new card


def test_an_unauthenticated_flood_does_not_starve_an_approved_client(
    server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    token = access_token(approved[1])
    stop = threading.Event()
    flood_codes: list[int] = []

    def flood() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as stranger:
            while not stop.is_set():
                flood_codes.append(stranger.post("/mcp", json={}).status_code)

    floods = [threading.Thread(target=flood) for _ in range(4)]
    for thread in floods:
        thread.start()
    try:
        time.sleep(0.5)
        codes = [mcp_post(server.url, token, "tools/list").status_code for _ in range(20)]
    finally:
        stop.set()
        for thread in floods:
            thread.join(timeout=10)
    assert codes == [200] * 20
    assert 429 in flood_codes and 200 not in flood_codes


def mcp_post(
    base: str, token: str, method: str, params: dict[str, object] | None = None
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    return httpx.post(base + "/mcp", json=body, headers=headers, timeout=30)


def test_a_token_used_at_another_resource_or_tampered_is_refused(
    server: HttpServer, approved: tuple[Browser, MemoryTokens], home: Path, tmp_path: Path
) -> None:
    token = access_token(approved[1])
    assert mcp_post(server.url, token, "tools/list").status_code == 200
    head, payload, signature = token.split(".")
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    assert mcp_post(server.url, f"{head}.{payload}.{flipped}", "tools/list").status_code == 401
    # The same gateway, another public URL: the token's audience is the first server's.
    root, _ = small_workspace(tmp_path)
    with http_server(home, root, client=True) as other:
        refused = mcp_post(other.url, token, "tools/list")
        assert refused.status_code == 401
        assert "resource_metadata" in refused.headers["www-authenticate"]


def test_the_mcp_inspector_connects_over_http_with_a_token_the_flow_issued(
    server: HttpServer, approved: tuple[Browser, MemoryTokens]
) -> None:
    need(INSPECTOR.exists(), "the MCP Inspector is not installed (run `npm ci`)")
    token = access_token(approved[1])
    argv = [
        str(INSPECTOR),
        "--cli",
        server.url + "/mcp",
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {token}",
        "--method",
        "tools/call",
        "--tool-name",
        "read_file",
        "--tool-arg",
        "path=notes.md",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"]["text"] == "zebra crossing\n"
    anonymous = subprocess.run(
        argv[:5] + argv[7:], capture_output=True, text=True, timeout=120, check=False
    )
    assert anonymous.returncode != 0


def test_the_flow_through_nginx_terminating_tls_with_the_public_url_set_to_it(
    home: Path, tmp_path: Path
) -> None:
    need(nginx_installed(), "nginx is not installed (Debian package nginx)")
    root, _ = small_workspace(tmp_path / "ws")
    public_port = free_port()
    public_url = f"https://localhost:{public_port}"
    with (
        http_server(home, root, "--public-url", public_url, client=True) as behind,
        running_nginx(tmp_path / "nginx", behind.port, public_port) as nginx,
    ):
        ca = ssl.create_default_context(cafile=str(nginx.ca_file))
        browser, storage = Browser(home, verify=ca), MemoryTokens()
        auth = provider(public_url + "/mcp", browser, storage)
        session = anyio.run(read_remotely, public_url + "/mcp", auth, "auto", ca)
        assert session.read["text"] == "zebra crossing\n"
        assert session.search["results"][0]["id"] == "notes.md"
        token = access_token(storage)
        assert jwt.decode(token, options={"verify_signature": False})["aud"] == (
            public_url + "/mcp"
        )
        assert CANARY not in behind.log()


def test_revoking_a_client_stops_it_at_its_next_request(home: Path, server: HttpServer) -> None:
    browser, storage = Browser(home), MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage)
    anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    token = access_token(storage)
    assert mcp_post(server.url, token, "tools/list").status_code == 200
    client_id = jwt.decode(token, options={"verify_signature": False})["sub"]
    listed = json.loads(sp(home, "context", "clients", "list", "--json").stdout)
    assert client_id in json.dumps(listed)
    sp(home, "context", "clients", "revoke", client_id)
    refused = mcp_post(server.url, token, "tools/list")
    assert refused.status_code == 401
    assert "resource_metadata" in refused.headers["www-authenticate"]


def test_a_token_reads_only_the_roots_it_was_approved_for(home: Path, tmp_path: Path) -> None:
    root, _ = small_workspace(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "elsewhere.md").write_text("zebra elsewhere\n")
    port = free_port()
    browser, storage = Browser(home), MemoryTokens()
    with http_server(home, root, port=port, client=True) as first:
        auth = provider(first.url + "/mcp", browser, storage)
        anyio.run(read_remotely, first.url + "/mcp", auth, "legacy")
    token = access_token(storage)
    [bound] = jwt.decode(token, options={"verify_signature": False})["sp_roots"]
    assert bound.startswith("proj~")  # the name, and a digest of its directory
    # The same public URL now serves a second root: this token still sees only its own.
    with http_server(home, root, "--root", str(other), port=port, client=True) as both:
        roots = call(both.url, token, "list_roots", {})
        assert [r["name"] for r in roots["structuredContent"]["roots"]] == ["proj"]
        deadline = time.monotonic() + 60  # the new server's index is built in the background
        while call(both.url, token, "get_health", {})["structuredContent"]["index_state"] != (
            "ready"
        ):
            assert time.monotonic() < deadline, "the index never became ready"
            time.sleep(0.2)
        found = call(both.url, token, "search_project", {"query": "zebra"})
        assert [hit["path"] for hit in found["structuredContent"]["hits"]] == ["notes.md"]
        for path in ("other/elsewhere.md", "../other/elsewhere.md", str(other / "elsewhere.md")):
            refused = call(both.url, token, "read_file", {"path": path})
            assert refused["isError"] is True
            assert "zebra elsewhere" not in json.dumps(refused)


def test_an_approval_holds_for_its_directory_not_for_another_of_the_same_name(
    home: Path, tmp_path: Path
) -> None:
    work, _ = small_workspace(tmp_path / "work")
    personal = tmp_path / "personal" / "proj"  # also named proj
    personal.mkdir(parents=True)
    (personal / "notes.md").write_text("zebra personal\n")
    port = free_port()
    browser, storage = Browser(home), MemoryTokens()
    with http_server(home, work, port=port, client=True) as first:
        auth = provider(first.url + "/mcp", browser, storage)
        anyio.run(read_remotely, first.url + "/mcp", auth, "legacy")
    assert f"proj ({work})" in json.dumps(browser.cards[0])  # the card names the folder
    token, read = access_token(storage), {"path": "notes.md"}
    # The same folder after a restart: the token and its refresh keep working, no card.
    with http_server(home, work, port=port, client=True) as again:
        assert call(again.url, token, "read_file", read)["structuredContent"]["text"] == (
            "zebra crossing\n"
        )
        refreshed = refresh(again.url, storage)
        assert mcp_post(again.url, refreshed, "tools/list").status_code == 200
    # Another folder of the same name: every token of that approval grants nothing there.
    with http_server(home, personal, port=port, client=True) as other:
        for stale in (token, refreshed, refresh(other.url, storage)):
            answer = mcp_post(
                other.url, stale, "tools/call", {"name": "read_file", "arguments": read}
            )
            assert answer.status_code == 403 and "zebra personal" not in answer.text
        # The same client and redirect asking again: the human sees a card for this folder.
        storage.tokens = None
        auth = provider(other.url + "/mcp", browser, storage)
        session = anyio.run(read_remotely, other.url + "/mcp", auth, "legacy")
    assert session.read["text"] == "zebra personal\n"
    assert len(browser.cards) == 2 and f"proj ({personal})" in json.dumps(browser.cards[1])


def refresh(base: str, storage: MemoryTokens) -> str:
    """A refresh grant as the client makes it; the rotated refresh token is kept."""
    assert storage.tokens is not None and storage.tokens.refresh_token is not None
    form = {
        "grant_type": "refresh_token",
        "refresh_token": storage.tokens.refresh_token,
        "client_id": storage.client.client_id,
    }
    answer = httpx.post(base + "/token", data=form, timeout=30)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    storage.tokens = storage.tokens.model_copy(update={"refresh_token": body["refresh_token"]})
    return str(body["access_token"])


def call(base: str, token: str, tool: str, arguments: Mapping[str, object]) -> dict[str, Any]:
    answer = mcp_post(base, token, "tools/call", {"name": tool, "arguments": arguments})
    assert answer.status_code == 200, answer.text
    for line in answer.text.splitlines():
        if line.startswith("data:"):
            result: dict[str, Any] = json.loads(line[5:])["result"]
            return result
    raise AssertionError(answer.text)
