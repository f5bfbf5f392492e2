"""Remote actions through `sp context serve --http --profile agent`, with the gateway's
`[remote] actions = true`: the client's proposal carries its access token, the card (asked for
this call alone) names the remote client, the client hears progress while the card waits, and
the action tools say they act."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.gateway import POLICY, Gateway, decide, wait_card
from harness.http_context import HttpServer, http_server
from harness.remote_flow import Browser, MemoryTokens, provider, read_remotely
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("gwa"))
    remote = "\n[remote]\nactions = true\naccess_token_minutes = 5\n"
    gw.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 30") + remote)
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


@pytest.fixture(scope="module")
def server(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("wsa"))
    with http_server(gateway.home, root, "--profile", "agent", client=True) as running:
        yield running


def test_a_remote_proposal_carries_the_client_and_is_asked_per_call(
    gateway: Gateway, server: HttpServer, tmp_path: Path
) -> None:
    browser, storage = Browser(gateway.home, harness=gateway), MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage, client_name="Remote agent")
    anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    assert storage.tokens is not None
    token = storage.tokens.access_token

    messages: list[str] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")

    async def propose() -> tuple[dict[str, object], dict[str, object]]:
        headers = {"authorization": f"Bearer {token}"}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        # An earlier-version client (2025-11-25) hears progress while the card waits; a
        # 2026-07-28 one gets input_required (test_http_input_required_e2e.py).
        transport = streamable_http_client(server.url + "/mcp", http_client=http)
        async with http, Client(transport, mode="legacy") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            annotations = tools["ssh_exec"].annotations
            assert annotations is not None and annotations.destructive_hint is True
            assert tools["read_file"].annotations.read_only_hint is True  # type: ignore[union-attr]
            args = {"host_id": "session-host", "command_id": "uptime", "args": {}}
            async with anyio.create_task_group() as tasks:
                card: dict[str, object] = {}

                def answer() -> None:
                    card.update(wait_card(gateway, timeout=20))
                    assert decide(gateway, str(card["id"]))["ok"]

                tasks.start_soon(anyio.to_thread.run_sync, answer)
                result = await c.call_tool("ssh_exec", args, progress_callback=heard)
            assert not result.is_error, result.content
            return card, dict(result.structured_content or {})

    card, result = anyio.run(propose)
    assert card["scope"] == "per-call"
    # While the card waited, the client heard which card and how the human answers it.
    assert any(str(card["id"]) in message for message in messages), messages
    assert "Remote agent" in json.dumps(card)
    assert result["exit_status"] == 0
    assert token not in json.dumps(gateway.journal("actions"))
    assert token not in server.log()
