"""The OAuth flow as a remote client and its human live it: the MCP SDK's own OAuth client
provider drives it, this module plays the browser (the authorization page, the code on it, the
long poll) and the human (the card, answered through the real `sp approvals` CLI)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthToken

from harness.gateway import REPO, Gateway, clean_env, decide

REDIRECT_URI = "http://127.0.0.1:9/callback"  # never reached: the test reads the redirect


def sp(home: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "safeport", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(home),
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


class MemoryTokens:
    """The client's token storage (the SDK asks for one)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: Any = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


@dataclass
class Browser:
    """Opens the authorization URL, shows the code, waits for the human, follows the redirect."""

    home: Path
    verify: ssl.SSLContext | bool = True
    approve: bool = True
    # The harness gateway (which `sp approvals` refuses to talk to, rightly: it is not `sp
    # gateway run`) is answered through its control socket, the same approvals.decide.
    harness: Gateway | None = None
    seen_codes: list[str] = field(default_factory=list)
    cards: list[dict[str, Any]] = field(default_factory=list)
    authorize_url: str = ""

    async def redirect_handler(self, url: str) -> None:
        self.authorize_url = url

    async def callback_handler(self) -> AuthorizationCodeResult:
        location = await anyio.to_thread.run_sync(self._walk)
        query = parse_qs(urlsplit(location).query)
        assert "code" in query, location
        return AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    def _walk(self) -> str:
        page = httpx.get(self.authorize_url, verify=self.verify, timeout=30)
        assert page.status_code == 200, page.text
        assert "script" not in page.headers["content-security-policy"]
        user_code = _attribute(page.text, "data-user-code")
        request_id = _attribute(page.text, "data-request-id")
        self.seen_codes.append(user_code)
        card = self._answer_card(user_code)
        self.cards.append(card)
        wait = urljoin(self.authorize_url, f"/authorize/wait?request_id={request_id}")
        for _ in range(10):
            answer = httpx.get(wait, verify=self.verify, timeout=40)
            if answer.status_code == 302:
                return answer.headers["location"]
            assert answer.status_code == 303, answer.text
        raise AssertionError("the authorization never ended")

    def _answer_card(self, user_code: str) -> dict[str, Any]:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.harness is not None:
                cards = self.harness.control("approvals.list")["result"]["cards"]
            else:
                cards = json.loads(sp(self.home, "approvals", "list", "--json").stdout or "[]")
            for card in cards:
                if user_code in json.dumps(card):
                    self._decide(str(card["id"]))
                    return dict(card)
            time.sleep(0.1)
        raise AssertionError(f"no card shows the code {user_code}")

    def _decide(self, card_id: str) -> None:
        if self.harness is not None:
            assert decide(self.harness, card_id, self.approve)["ok"]
            return
        verb = "approve" if self.approve else "deny"
        sp(self.home, "approvals", verb, card_id, "--passphrase-file", str(self.home / "pw"))


def register_by_hand(base: str, name: str) -> str:
    """A public client registered at ``base``'s relay without the SDK (dynamic registration);
    its client id."""
    registered = httpx.post(
        base + "/register",
        json={
            "client_name": name,
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
        },
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    return str(registered.json()["client_id"])


def code_by_hand(home: Path, base: str, client_id: str) -> dict[str, str]:
    """One authorization of ``client_id`` through ``base``'s pages, the human answering the
    card: the token request that would exchange its code (not sent)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "s",
        "resource": base + "/mcp",
    }
    browser = Browser(home, authorize_url=base + "/authorize?" + urlencode(query))
    return {
        "grant_type": "authorization_code",
        "code": anyio.run(browser.callback_handler).code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI,
        "client_id": client_id,
    }


def _attribute(html: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]+)"', html)
    assert found, f"{name} not on the page"
    return found.group(1)


def provider(
    mcp_url: str,
    browser: Browser,
    storage: MemoryTokens,
    metadata_url: str | None = None,
    client_name: str = "Test remote client",
) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[REDIRECT_URI],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
        client_metadata_url=metadata_url,
    )


@dataclass(frozen=True)
class Session:
    tools: list[str]
    read: dict[str, Any]
    search: dict[str, Any]
    # Deep Research's pair: each with an output schema, and its text item the same JSON.
    deep_research: dict[str, tuple[dict[str, Any], Any, dict[str, Any] | None]]


async def read_remotely(
    mcp_url: str, auth: httpx2.Auth, mode: str = "auto", verify: ssl.SSLContext | bool = True
) -> Session:
    """List the tools, read notes.md and search for 'zebra', as a remote client does."""
    async with httpx2.AsyncClient(auth=auth, verify=verify, timeout=60) as http:
        transport = streamable_http_client(mcp_url, http_client=http)
        async with Client(transport, mode=mode) as client:
            tools = await client.list_tools()
            read = await client.call_tool("read_file", {"path": "notes.md"})
            found = await client.call_tool("search", {"query": "zebra"})
            assert not read.is_error, read.content
            assert not found.is_error, found.content
            fetched = await client.call_tool("fetch", {"id": "notes.md"})
            schemas = {t.name: t.output_schema for t in tools.tools}
            pairs = {}
            for name, result in (("search", found), ("fetch", fetched)):
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                pairs[name] = (
                    dict(result.structured_content or {}),
                    json.loads(text),
                    schemas[name],
                )
            return Session(
                [t.name for t in tools.tools],
                dict(read.structured_content or {}),
                dict(found.structured_content or {}),
                pairs,
            )


def journal_text(home: Path, needle: str, timeout: float = 10.0) -> str:
    """The reads journal once it holds ``needle``: a record is written within a fraction of a
    second of its call, later on a loaded machine."""
    path = home / "audit" / "reads.jsonl"
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text() if path.exists() else ""
        if needle in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)
