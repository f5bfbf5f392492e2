"""The held action's approval page (``/approval/<page>``) as an attacker would try it: the app
in process (no gateway: the page never asks it), and the table behind the page."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import InputRequiredResult
from starlette.testclient import TestClient

from safeport.context_server.http.admission import Admission, Rate
from safeport.context_server.http.app import RemoteRoot, RemoteService, build_app
from safeport.context_server.http.endpoint import HttpEndpoint
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.tools.held_proposals import ApprovalView, CardSignal, HeldProposals
from safeport.shared.schemas.wire import PendingBody
from tests.context_server.tools.test_held_proposals import CTX, as_client

PUBLIC = "https://tunnel.safeport.test"
PAGE = "P" * 32
EVIL = PendingBody(
    card='c-"><script>alert(1)</script>',
    expires_in_s=30,
    approve_with="</code><img src=x onerror=alert(1)>",
)


def _app(view: Any, profile: str = "agent", admission: Admission | None = None) -> TestClient:
    endpoint = HttpEndpoint("127.0.0.1", 8765, PUBLIC)
    paths = SimpleNamespace(
        agent_socket="/nonexistent/agent.sock", revocation_notice=None, gateway_uid=None
    )
    gateway = OAuthGateway(cast(Any, paths), PUBLIC)  # never reached: no lifespan, no token
    service = RemoteService(
        [RemoteRoot("r1", "/tmp/r1")],
        cast(Any, profile),
        view if profile == "agent" else None,
    )
    app = build_app(endpoint, service, cast(Any, gateway), cast(Any, None), admission)
    return TestClient(app, base_url=PUBLIC)


def _shows(card: PendingBody, waiting: bool = True) -> Any:
    return lambda page: (
        ApprovalView(card.card, card.approve_with, waiting) if page == PAGE else None
    )


def test_host_and_origin_guards_cover_the_page() -> None:
    client = _app(_shows(EVIL))
    assert client.get("/approval/" + PAGE).status_code == 200
    assert client.get("/approval/" + PAGE, headers={"host": "attacker.example"}).status_code == 421
    answer = client.get("/approval/" + PAGE, headers={"origin": "http://attacker.example"})
    assert answer.status_code == 403


def test_card_and_approve_with_are_escaped_and_headers_forbid_framing_caching_referrer() -> None:
    for waiting in (True, False):
        client = _app(_shows(EVIL, waiting))
        answer = client.get("/approval/" + PAGE)
        assert "<script>" not in answer.text and "<img" not in answer.text
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["cache-control"] == "no-store"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY"


def test_unknown_short_long_and_odd_ids_all_get_the_same_404() -> None:
    client = _app(_shows(EVIL))
    bodies = {
        (r.status_code, r.text)
        for r in (
            client.get("/approval/" + "Q" * 32),
            client.get("/approval/x"),
            client.get("/approval/" + "Q" * 65),
            client.get("/approval/%00" + "Q" * 31),
            client.get("/approval/" + PAGE.lower()),
        )
    }
    assert len(bodies) == 1 and bodies.pop()[0] == 404


def test_a_reader_server_has_no_page_route() -> None:
    client = _app(_shows(EVIL), profile="reader")
    answer = client.get("/approval/" + PAGE)
    assert answer.status_code == 404 and "No approval" not in answer.text


def test_the_page_is_charged_to_the_anonymous_bucket() -> None:
    admission = Admission(anonymous_rate=Rate(per_second=0.0001, burst=2))
    client = _app(_shows(EVIL), admission=admission)
    codes = [client.get("/approval/" + PAGE).status_code for _ in range(4)]
    assert codes == [200, 200, 429, 429]


def test_a_card_that_timed_out_or_was_refused_is_not_shown_as_answered() -> None:
    """Finding: a proposal that ended WITHOUT the human answering (the card timed out, the
    gateway went away) is shown as "Card ... was answered" -- the human who never answered is
    told someone did, and is not told the action will not run."""

    async def run() -> None:
        table = HeldProposals()
        table.pages_at(PUBLIC + "/approval/")
        as_client("client-a")
        timed_out = asyncio.Event()

        async def proposal(signal: CardSignal) -> dict[str, Any]:
            await signal.card_opened(EVIL)
            await timed_out.wait()
            raise ToolError("expired: the approval's card timed out")

        first = await table.start(cast(Context, _url_ctx()), proposal)
        assert isinstance(first, InputRequiredResult) and first.meta is not None
        page = str(first.meta["io.safeport/approval"]["url"]).rsplit("/", 1)[1]
        timed_out.set()
        await asyncio.sleep(0.01)
        view = table.view(page)
        assert view is not None and not view.waiting
        html = _app(lambda p: view if p == page else None).get("/approval/" + page).text
        assert "</code> was answered" not in html and "no longer waits" in html, html
        with pytest.raises(ToolError, match="expired"):
            await table.resume(CTX, str(first.request_state))

    asyncio.run(run())


def test_a_url_only_client_without_a_page_is_sent_no_form() -> None:
    """Finding: a client that declared URL-mode elicitation only (``{"url": {}}``) on a server
    with no page (stdio) is sent a form-mode elicitation, a mode it said it cannot show."""

    async def run() -> None:
        table, decided = HeldProposals(), asyncio.Event()  # stdio: no pages_at
        as_client("client-a")

        async def proposal(signal: CardSignal) -> dict[str, Any]:
            await signal.card_opened(EVIL)
            await decided.wait()
            return {}

        url_only = SimpleNamespace(form=None, url=SimpleNamespace())
        ctx = SimpleNamespace(client_capabilities=SimpleNamespace(elicitation=url_only))
        first = await table.start(cast(Context, ctx), proposal)
        assert isinstance(first, InputRequiredResult) and first.meta is not None
        assert first.input_requests is None, first.input_requests  # the _meta still says it
        decided.set()
        assert await table.resume(CTX, str(first.request_state)) == {}

    asyncio.run(run())


def test_no_page_outlives_its_proposal_collected_swept_or_answered_at_once() -> None:
    async def run() -> None:
        now = [1000.0]
        table = HeldProposals(clock=lambda: now[0])
        table.pages_at(PUBLIC + "/approval/")
        as_client("client-a")

        async def quick(signal: CardSignal) -> dict[str, Any]:
            return {}

        async def never(signal: CardSignal) -> dict[str, Any]:
            await signal.card_opened(EVIL)
            await asyncio.Event().wait()
            return {}

        for _ in range(5):
            await table.start(CTX, quick)
        first = await table.start(cast(Context, _url_ctx()), never)
        assert isinstance(first, InputRequiredResult) and first.meta is not None
        page = str(first.meta["io.safeport/approval"]["url"]).rsplit("/", 1)[1]
        assert table.view(page) is not None
        now[0] += EVIL.expires_in_s + 61
        assert table.view(page) is None
        assert table._held == {}  # a page lives only in its entry
        with pytest.raises(ToolError):
            await table.resume(CTX, str(first.request_state))

    asyncio.run(run())


def _url_ctx() -> Any:
    capability = SimpleNamespace(form=SimpleNamespace(), url=SimpleNamespace())
    return SimpleNamespace(client_capabilities=SimpleNamespace(elicitation=capability))
