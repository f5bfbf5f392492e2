"""End to end with a client ID metadata document: the MCP SDK's OAuth provider presents the
document's HTTPS URL as its client id, the gateway fetches it from a real HTTPS server (a gateway
allowed, for this test only, to fetch from 127.0.0.1 with the test CA), the card says where the
document came from, and the client reads and searches over `sp context serve --http`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest

from harness.gateway import Gateway
from harness.http_context import HttpServer, http_server
from harness.real_tls import TlsServer, running_tls_server
from harness.remote_flow import (
    REDIRECT_URI,
    Browser,
    MemoryTokens,
    journal_text,
    provider,
    read_remotely,
)
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

DOCUMENT_PATH = "/apps/remote-client.json"


@pytest.fixture(scope="module")
def documents() -> Iterator[TlsServer]:
    with running_tls_server() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, documents: TlsServer) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("gwd"))
    gw.write_policy()
    gw.start("--unsafe-documents-on-loopback", str(documents.ca_file))
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


@pytest.fixture(scope="module")
def server(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("wsd"))
    with http_server(gateway.home, root, client=True) as running:
        yield running


@dataclass(frozen=True)
class Approved:
    """A client known by its metadata document, approved and through one remote session."""

    document_url: str
    browser: Browser
    storage: MemoryTokens
    session: Any


@pytest.fixture(scope="module")
def approved(gateway: Gateway, server: HttpServer, documents: TlsServer) -> Approved:
    """The flow, once per module, for whichever of the tests below runs (alone or first)."""
    document_url = documents.base_url() + DOCUMENT_PATH
    with documents.recorded.lock:
        documents.recorded.answers[DOCUMENT_PATH] = {
            "client_id": document_url,
            "client_name": "Document client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    browser, storage = Browser(gateway.home, harness=gateway), MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage, metadata_url=document_url)
    session = anyio.run(read_remotely, server.url + "/mcp", auth, "auto")
    return Approved(document_url, browser, storage, session)


def test_a_client_known_by_its_metadata_document_is_approved_and_reads(
    gateway: Gateway, documents: TlsServer, approved: Approved
) -> None:
    document_url, session = approved.document_url, approved.session
    assert session.read["text"] == "zebra crossing\n"
    assert session.search["results"][0]["id"] == "notes.md"
    card = json.dumps(approved.browser.cards[0])
    assert f"api.safeport.test:{documents.port}" in card and "Document client" in card
    assert DOCUMENT_PATH in documents.recorded.paths()[0]
    assert not any(p.startswith("/register") for p in documents.recorded.paths())
    journal = journal_text(gateway.home, document_url)
    assert document_url in journal  # the client, as its token proves it


def test_with_the_gateway_down_every_request_is_refused(
    gateway: Gateway, server: HttpServer, approved: Approved
) -> None:
    assert approved.storage.tokens is not None
    headers = {
        "authorization": f"Bearer {approved.storage.tokens.access_token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}

    def post() -> httpx.Response:
        return httpx.post(server.url + "/mcp", json=body, headers=headers, timeout=30)

    assert post().status_code == 200
    assert gateway.stop() == 0
    down = post()
    assert down.status_code == 503  # fail closed: no word from the gateway, no answer
    assert "tools" not in down.text
    gateway.start()
    gateway.unlock()
    # A restarted gateway honours nothing it issued before its vault was locked: the client
    # is told to authorize again (401 pointing at the metadata), not that the server is down.
    again = post()
    assert again.status_code == 401
    assert "resource_metadata" in again.headers["www-authenticate"]
