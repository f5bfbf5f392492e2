"""The table of proposals waiting for a human (pure logic: a stand-in context, a stand-in
clock). The end-to-end behaviour through a real gateway and the SDK's seal is in
tests/context_server/http/test_http_input_required_e2e.py; here, the checks the seal already
makes are checked once more by the table itself, and the sweep."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams, InputRequiredResult

from safeport.context_server.operations.reads_journal import REMOTE_CLIENT, RemoteClient
from safeport.context_server.tools.held_proposals import STATE_PREFIX, CardSignal, HeldProposals
from safeport.shared.schemas.wire import PendingBody

CTX = cast(Context, SimpleNamespace(client_capabilities=None))
CARD = PendingBody(card="c-0123456789ab", expires_in_s=30, approve_with="sp approvals watch")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def as_client(client_id: str) -> None:
    REMOTE_CLIENT.set(RemoteClient(client_id, client_id.upper()))


async def held_call(table: HeldProposals, decided: asyncio.Event) -> InputRequiredResult:
    async def proposal(signal: CardSignal) -> dict[str, Any]:
        await signal.card_opened(CARD)
        await decided.wait()
        return {"exit_status": 0}

    first = await table.start(CTX, proposal)
    assert isinstance(first, InputRequiredResult) and first.request_state is not None
    return first


def test_the_owner_gets_its_result_and_another_client_gets_an_error_never_the_result() -> None:
    async def run() -> None:
        table, decided = HeldProposals(), asyncio.Event()
        as_client("client-a")
        first = await held_call(table, decided)
        assert first.meta is not None and "sp approvals watch" in str(first.meta)
        decided.set()
        as_client("client-b")
        with pytest.raises(ToolError, match="expired"):
            await table.resume(CTX, str(first.request_state))
        as_client("client-a")
        assert await table.resume(CTX, str(first.request_state)) == {"exit_status": 0}
        with pytest.raises(ToolError, match="expired"):  # fetched once, then gone
            await table.resume(CTX, str(first.request_state))
        with pytest.raises(ToolError, match="expired"):
            await table.resume(CTX, STATE_PREFIX + "guessed")

    asyncio.run(run())


def test_a_handle_past_its_cards_life_is_swept_and_frees_its_place() -> None:
    async def run() -> None:
        clock = Clock()
        table, decided = HeldProposals(per_client=1, clock=clock), asyncio.Event()
        as_client("client-a")
        first = await held_call(table, decided)
        with pytest.raises(ToolError, match="busy"):
            await held_call(table, decided)
        clock.now += CARD.expires_in_s + 61
        second = await held_call(table, decided)  # the sweep made room
        with pytest.raises(ToolError, match="expired"):
            await table.resume(CTX, str(first.request_state))
        decided.set()
        assert await table.resume(CTX, str(second.request_state)) == {"exit_status": 0}

    asyncio.run(run())


def test_a_proposal_that_needs_no_human_answers_at_once_and_holds_nothing() -> None:
    async def run() -> None:
        table = HeldProposals(per_client=1)
        as_client("client-a")

        async def granted(signal: CardSignal) -> dict[str, Any]:
            return {"exit_status": 0}

        for _ in range(3):  # never held, so never counted against the client
            assert await table.start(CTX, granted) == {"exit_status": 0}

    asyncio.run(run())


def test_an_outcome_nobody_fetches_is_dropped_a_minute_after_the_decision() -> None:
    async def run() -> None:
        clock = Clock()
        table, decided = HeldProposals(per_client=1, clock=clock), asyncio.Event()
        as_client("client-a")
        first = await held_call(table, decided)
        decided.set()
        await asyncio.sleep(0.01)  # the proposal ends; its outcome now waits a minute
        clock.now += 59
        with pytest.raises(ToolError, match="busy"):
            await held_call(table, asyncio.Event())
        clock.now += 2
        with pytest.raises(ToolError, match="expired"):
            await table.resume(CTX, str(first.request_state))

    asyncio.run(run())


def _with(elicitation: object) -> Context:
    return cast(
        Context, SimpleNamespace(client_capabilities=SimpleNamespace(elicitation=elicitation))
    )


FORM_ONLY = SimpleNamespace(form=SimpleNamespace(), url=None)
FORM_AND_URL = SimpleNamespace(form=SimpleNamespace(), url=SimpleNamespace())


def test_a_held_proposal_has_a_page_apart_from_its_handle_that_shows_only_the_card() -> None:
    async def run() -> None:
        table, decided = HeldProposals(), asyncio.Event()
        table.pages_at("https://tunnel.example/approval/")
        as_client("client-a")

        async def proposal(signal: CardSignal) -> dict[str, Any]:
            await signal.card_opened(CARD)
            await decided.wait()
            return {"exit_status": 0}

        first = await table.start(_with(FORM_AND_URL), proposal)
        assert isinstance(first, InputRequiredResult) and first.input_requests is not None
        link = first.input_requests["approval"].params
        assert isinstance(link, ElicitRequestURLParams) and "sp approvals watch" in link.message
        page = link.url.removeprefix("https://tunnel.example/approval/")
        assert link.elicitation_id == page and page not in str(first.request_state)
        view = table.view(page)
        assert view is not None and (view.card, view.waiting) == (CARD.card, True)
        assert table.view("x" * len(page)) is None
        decided.set()
        await asyncio.sleep(0)
        answered = table.view(page)
        assert answered is not None and not answered.waiting
        assert await table.resume(CTX, str(first.request_state)) == {"exit_status": 0}
        assert table.view(page) is None  # collected: the page is gone with it

    asyncio.run(run())


def test_a_form_only_client_and_a_stdio_server_get_no_url() -> None:
    async def run() -> None:
        for pages, capability in ((True, FORM_ONLY), (False, FORM_AND_URL)):
            table, decided = HeldProposals(), asyncio.Event()
            if pages:
                table.pages_at("https://tunnel.example/approval/")
            as_client("client-a")

            async def proposal(signal: CardSignal, decided: asyncio.Event = decided) -> Any:
                await signal.card_opened(CARD)
                await decided.wait()
                return {}

            first = await table.start(_with(capability), proposal)
            assert isinstance(first, InputRequiredResult) and first.input_requests is not None
            form = first.input_requests["approval"].params
            assert isinstance(form, ElicitRequestFormParams)
            assert ("url" in str(first.meta)) is pages  # _meta carries the page when served
            decided.set()

    asyncio.run(run())
