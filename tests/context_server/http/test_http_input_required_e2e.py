"""Waiting for a human under MCP 2026-07-28: a remote action whose card waits answers
`input_required` at once (the instructions and a sealed `requestState`), the proposal keeps
running at the context server, and the retry with that state gets the result. Beside it: the
state replayed by another client, a forged state, a retry after the card timed out, and a full
table of waiting proposals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

from harness.gateway import POLICY, Gateway, decide, wait_card
from harness.http_context import HttpServer, http_server
from harness.remote_flow import Browser, MemoryTokens, provider, read_remotely
from safeport.context_server.tools.held_proposals import MAX_HELD_PER_CLIENT
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

CARD_S = 6
UPTIME = {"host_id": "session-host", "command_id": "uptime", "args": {}}
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("gwi"))
    remote = "\n[remote]\nactions = true\naccess_token_minutes = 5\n"
    reads = '\n[ssh.hosts.session-host.commands.disk_free]\nargv = ["df"]\nread_only = true\n'
    timeout = f"approval_timeout_s = {CARD_S}"
    gw.write_policy(POLICY.replace("approval_timeout_s = 3", timeout) + reads + remote)
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


@pytest.fixture(scope="module")
def server(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("wsi"))
    with http_server(gateway.home, root, "--profile", "agent", client=True) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(gateway: Gateway, server: HttpServer) -> dict[str, str]:
    """Two approved remote clients, each with its own access token."""
    issued = {}
    for name in ("Client A", "Client B"):
        browser, storage = Browser(gateway.home, harness=gateway), MemoryTokens()
        auth = provider(server.url + "/mcp", browser, storage, client_name=name)
        anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
        assert storage.tokens is not None
        issued[name] = storage.tokens.access_token
    return issued


@asynccontextmanager
async def connected(server: HttpServer, token: str, **options: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(server.url + "/mcp", http_client=http)
    async with http, Client(transport, mode=MODERN, **options) as client:
        yield client


async def first_round(session: ClientSession) -> InputRequiredResult:
    first = await session.call_tool("ssh_exec", UPTIME, allow_input_required=True)
    assert isinstance(first, InputRequiredResult), first
    assert first.request_state is not None
    return first


def approval(first: InputRequiredResult) -> dict[str, Any]:
    assert first.meta is not None
    return dict(first.meta["io.safeport/approval"])


async def retry(session: ClientSession, state: str) -> CallToolResult | InputRequiredResult:
    return await session.call_tool(
        "ssh_exec", UPTIME, request_state=state, allow_input_required=True
    )


def text(result: CallToolResult) -> str:
    return " ".join(getattr(item, "text", "") for item in result.content)


def test_the_first_call_says_what_the_human_does_and_the_retry_gets_the_result(
    gateway: Gateway, server: HttpServer, tokens: dict[str, str]
) -> None:
    async def run() -> tuple[dict[str, Any], dict[str, Any], CallToolResult | InputRequiredResult]:
        async with connected(server, tokens["Client A"]) as client:
            first = await first_round(client.session)
            card = await anyio.to_thread.run_sync(wait_card, gateway)
            assert decide(gateway, str(card["id"]))["ok"]
            assert first.request_state is not None
            return card, approval(first), await retry(client.session, first.request_state)

    card, told, result = anyio.run(run)
    # The human is told which card and how to answer it; the card names the remote client.
    assert told["card"] == card["id"] and "sp approvals" in told["instructions"]
    assert card["scope"] == "per-call" and "Client A" in json.dumps(card)
    assert isinstance(result, CallToolResult) and not result.is_error, result
    assert (result.structured_content or {})["exit_status"] == 0
    assert tokens["Client A"] not in server.log()


def test_a_client_that_opens_urls_shows_the_approval_page_and_its_sdk_retries(
    gateway: Gateway, server: HttpServer, tokens: dict[str, str]
) -> None:
    """The SDK's client declares URL-mode elicitation: it is given the action's page, which
    the human opens -- the card's id and how to answer it, nothing to click -- then answers
    the card where the gateway runs; the page says so, and the SDK's retry gets the result."""
    pages: list[tuple[ElicitRequestParams, httpx.Response, httpx.Response]] = []

    async def human(context: object, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams), params
        waiting = await anyio.to_thread.run_sync(lambda: httpx.get(params.url, timeout=10))
        card = await anyio.to_thread.run_sync(wait_card, gateway)
        assert decide(gateway, str(card["id"]))["ok"]
        answered = await anyio.to_thread.run_sync(lambda: httpx.get(params.url, timeout=10))
        pages.append((params, waiting, answered))
        return ElicitResult(action="accept")

    async def run() -> CallToolResult:
        async with connected(server, tokens["Client A"], elicitation_callback=human) as client:
            return await client.call_tool("ssh_exec", UPTIME)

    result = anyio.run(run)
    assert not result.is_error, result.content
    [(params, waiting, answered)] = pages
    assert isinstance(params, ElicitRequestURLParams) and "sp approvals" in params.message
    assert params.url.startswith(server.url + "/approval/")
    assert waiting.status_code == 200 and "sp approvals watch" in waiting.text
    assert "waits for your approval" in waiting.text and "<form" not in waiting.text
    assert waiting.headers["content-security-policy"].startswith("default-src 'none'")
    assert answered.status_code == 200 and "no longer waits" in answered.text
    gone = httpx.get(params.url, timeout=10)  # collected with its result: no page left
    assert gone.status_code == 404 and "No approval waits here" in gone.text
    guessed = httpx.get(server.url + "/approval/" + "A" * 32, timeout=10)
    assert guessed.status_code == 404 and guessed.text == gone.text
    assert tokens["Client A"] not in server.log()


def test_another_clients_or_a_forged_state_is_refused_and_the_owner_still_gets_its_result(
    gateway: Gateway, server: HttpServer, tokens: dict[str, str]
) -> None:
    async def run() -> list[str]:
        refusals = []
        async with connected(server, tokens["Client A"]) as a:
            first = await first_round(a.session)
            state = first.request_state
            assert state is not None
            forged = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
            async with connected(server, tokens["Client B"]) as b:
                for attempt in (state, forged):
                    with pytest.raises(MCPError) as refused:
                        await retry(b.session, attempt)
                    refusals.append(str(refused.value))
            with pytest.raises(MCPError) as refused:
                await retry(a.session, forged)
            refusals.append(str(refused.value))
            card = await anyio.to_thread.run_sync(wait_card, gateway)
            assert decide(gateway, str(card["id"]))["ok"]
            result = await retry(a.session, state)
            assert isinstance(result, CallToolResult) and not result.is_error, result
        return refusals

    refusals = anyio.run(run)
    assert all("Invalid or expired requestState" in r for r in refusals), refusals
    # The replayed state was refused for its principal (the seal held), the forged ones for
    # their seal; the reasons stay in the server's log.
    assert "requestState rejected on tools/call: principal" in server.log()
    assert "requestState rejected on tools/call: seal" in server.log()


def test_a_retry_after_the_card_timed_out_is_a_clear_error(
    gateway: Gateway, server: HttpServer, tokens: dict[str, str]
) -> None:
    async def run() -> CallToolResult | InputRequiredResult:
        async with connected(server, tokens["Client B"]) as client:
            first = await first_round(client.session)
            assert first.request_state is not None
            await anyio.sleep(CARD_S + 1)
            return await retry(client.session, first.request_state)

    result = anyio.run(run)
    assert isinstance(result, CallToolResult) and result.is_error
    assert "no approver answered in time" in text(result), result.content


def test_a_full_table_refuses_new_proposals_and_keeps_the_held_ones(
    gateway: Gateway, server: HttpServer, tokens: dict[str, str]
) -> None:
    async def run() -> tuple[CallToolResult, list[CallToolResult | InputRequiredResult]]:
        async with connected(server, tokens["Client B"]) as client:
            states = []
            for _ in range(MAX_HELD_PER_CLIENT):  # decided, never fetched: each stays held
                first = await first_round(client.session)
                assert first.request_state is not None
                states.append(first.request_state)
                card = await anyio.to_thread.run_sync(wait_card, gateway)
                assert decide(gateway, str(card["id"]))["ok"]
            refused = await client.session.call_tool("ssh_exec", UPTIME)
            assert not isinstance(refused, InputRequiredResult)
            return refused, [await retry(client.session, state) for state in states]

    refused, held = anyio.run(run)
    assert refused.is_error and "busy" in text(refused), refused.content
    for result in held:
        assert isinstance(result, CallToolResult) and not result.is_error, result


def test_action_tools_say_whether_they_act_and_what_chatgpt_shows_while_they_wait(
    server: HttpServer, tokens: dict[str, str]
) -> None:
    async def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with connected(server, tokens["Client A"]) as client:
            tools = {t.name: t.model_dump(by_alias=True) for t in (await client.list_tools()).tools}
            listed = await client.call_tool("list_actions", {})
            return tools, list((listed.structured_content or {})["actions"])

    tools, actions = anyio.run(run)
    assert tools["ssh_exec"]["annotations"]["destructiveHint"] is True
    assert tools["run_readonly_query"]["annotations"]["readOnlyHint"] is True
    typed = [a for a in actions if a["tool"]]
    assert {a["read_only"] for a in typed} == {True, False}  # the policy has both kinds
    for action in typed:
        hints = tools[action["tool"]]["annotations"]
        assert hints["readOnlyHint"] is action["read_only"]
        assert hints["destructiveHint"] is not action["read_only"]
        assert hints["openWorldHint"] is True
    for name in ("ssh_exec", "http_request", "run_readonly_query", typed[0]["tool"]):
        meta = tools[name]["_meta"]
        assert 0 < len(meta["openai/toolInvocation/invoking"]) <= 64
        assert 0 < len(meta["openai/toolInvocation/invoked"]) <= 64
