"""A client known by its metadata document, end to end through a real gateway process: the
document is fetched from a real HTTPS server, the card says where it came from, tokens follow;
the same URL on loopback is refused by a gateway run with the default rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import Gateway
from harness.real_tls import TlsServer
from tests.action_gateway.remote_clients.oauth_flow import REDIRECT, Relay, claims, fields_of, pkce

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.remote_clients"


def _document(server: TlsServer, path: str) -> str:
    url = f"{server.base_url()}{path}"
    body = {"client_id": url, "client_name": "Doc Client", "redirect_uris": [REDIRECT]}
    with server.recorded.lock:
        server.recorded.answers[path] = body
    return url


@pytest.fixture
def documents_gateway(gateway_home: Path, documents_server: TlsServer) -> Iterator[Gateway]:
    """A gateway allowed, for this test only, to fetch documents from 127.0.0.1 (test CA)."""
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start("--unsafe-documents-on-loopback", str(documents_server.ca_file))
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def test_a_metadata_document_client_is_approved_by_its_host_and_gets_tokens(
    documents_gateway: Gateway, documents_server: TlsServer
) -> None:
    client_id = _document(documents_server, "/apps/doc-client.json")
    relay = Relay(documents_gateway)
    try:
        code = pkce()
        card, query = relay.approved_code(client_id, code)
        fields = fields_of(card)
        assert fields["metadata"] == f"api.safeport.test:{documents_server.port}"
        assert fields["client id"] == client_id and fields["client"] == "Doc Client"
        assert fields["code"] == card["user_code_shown"]
        answer = relay.token(
            grant_type="authorization_code",
            code=query["code"][0],
            redirect_uri=REDIRECT,
            client_id=client_id,
            code_verifier=code.verifier,
        )
        assert claims(relay, answer["body"]["access_token"])["sub"] == client_id
        listed = documents_gateway.control("clients.list")["result"]["clients"]
        assert [(c["client_id"], c["source"]) for c in listed] == [(client_id, "metadata-document")]
    finally:
        relay.exit()


def test_the_default_gateway_refuses_a_metadata_document_on_loopback(
    gateway: Gateway, documents_server: TlsServer
) -> None:
    # localhost resolves through the system resolver, as any name would.
    client_id = f"https://localhost:{documents_server.port}/apps/loopback.json"
    relay = Relay(gateway)
    try:
        answer = relay.authorize(client_id, pkce())
        assert answer["kind"] == "error" and answer["location"] is None
        refused = [
            r["body"] for r in gateway.journal("sessions") if r["kind"] == "oauth.document_refused"
        ]
        assert refused and "address" in refused[-1]["reason"]
    finally:
        relay.exit()
