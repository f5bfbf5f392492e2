"""End to end, the real gateway and `sp context serve --http`: while strangers flood the public
URL (each test starts once their requests are being turned away with 429), an approved client
still refreshes its token and a client whose human just approved it still exchanges its code --
their grants carry the gateway's signature for them. Forged grants never get through, and the
gateway refuses them as before. How much of a flood is turned away depends on how fast the
machine lets the strangers ask, so it is not counted here: which bucket each request is charged
to is held with a clock the test sets in test_grant_charge.py and test_http_decisions.py."""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import jwt
import pytest

from harness.http_context import HttpServer, http_server
from harness.remote_flow import (
    Browser,
    MemoryTokens,
    code_by_hand,
    provider,
    read_remotely,
    register_by_hand,
)
from safeport.action_gateway.remote_clients.signing_key import SigningKey
from safeport.shared.grant_tokens import mint
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.http.test_http_oauth_e2e import mcp_post
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

META = "/.well-known/oauth-protected-resource/mcp"
# Every code and refresh token this module saw, for the test that the server log has none.
SEEN: list[str] = []


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


def approve(home: Path, server: HttpServer, name: str) -> MemoryTokens:
    browser, storage = Browser(home), MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage, client_name=name)
    anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    SEEN.append(refresh_token(storage))
    return storage


@pytest.fixture(scope="module")
def clients(home: Path, server: HttpServer) -> tuple[MemoryTokens, MemoryTokens]:
    return approve(home, server, "Flooded client"), approve(home, server, "Other client")


def refresh_token(storage: MemoryTokens) -> str:
    assert storage.tokens is not None and storage.tokens.refresh_token is not None
    return storage.tokens.refresh_token


def token_post(server: HttpServer, form: dict[str, str]) -> httpx.Response:
    return httpx.post(server.url + "/token", data=form, timeout=30)


def refresh_form(token: str, client_id: str) -> dict[str, str]:
    return {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}


def refresh(server: HttpServer, storage: MemoryTokens) -> httpx.Response:
    """The client's refresh grant; the rotated refresh token is kept when it is granted."""
    answer = token_post(server, refresh_form(refresh_token(storage), storage.client.client_id))
    if answer.status_code == 200:
        body = answer.json()
        SEEN.append(body["refresh_token"])
        assert storage.tokens is not None
        update = {"refresh_token": body["refresh_token"], "access_token": body["access_token"]}
        storage.tokens = storage.tokens.model_copy(update=update)
    return answer


def junk_grant(client_id: str) -> dict[str, str]:
    """A grant of the right shape whose signature is noise: it costs a signature check."""
    signature = base64.urlsafe_b64encode(secrets.token_bytes(64)).rstrip(b"=").decode()
    return refresh_form(f"{secrets.token_urlsafe(32)}.{signature}", client_id)


@contextmanager
def flood(server: HttpServer, client_id: str) -> Iterator[list[int]]:
    """Strangers asking for the metadata and sending forged grants in the client's name, from
    four threads, until the block ends; yields their answers' status codes."""
    stop, codes = threading.Event(), list[int]()

    def stranger() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            while not stop.is_set():
                codes.append(http.get(META).status_code)
                codes.append(http.post("/token", data=junk_grant(client_id)).status_code)

    threads = [threading.Thread(target=stranger) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        # Past the anonymous bucket's burst: the strangers are being turned away (waited for,
        # not assumed after a fixed second, which a loaded machine may spend on 20 requests).
        deadline = time.monotonic() + 60
        while codes.count(429) < 20:
            assert time.monotonic() < deadline, codes[-10:]
            time.sleep(0.05)
        yield codes
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
        time.sleep(3.5)  # the anonymous bucket refills (burst 60 at 20/s) for the next test


def test_forged_grants_are_charged_with_the_strangers_and_refused_by_the_gateway(
    server: HttpServer, clients: tuple[MemoryTokens, MemoryTokens]
) -> None:
    mine, other = clients
    client_id, other_id = mine.client.client_id, other.client.client_id
    genuine, others = refresh_token(mine), refresh_token(other)
    forged = {
        "another client's signature": refresh_form(
            genuine.split(".")[0] + "." + others.split(".")[1], client_id
        ),
        "another key": refresh_form(
            mint("refresh", client_id, SigningKey.from_seed(bytes(32)).sign_bytes), client_id
        ),
        "client id changed": refresh_form(genuine, other_id),
    }
    SEEN.extend(form["refresh_token"] for form in forged.values())
    # Before any flood: the gateway refuses each, as it did before grants were signed (a
    # flood's failed grants reach it too, and past its own limit it answers slow_down).
    for name, form in forged.items():
        answer = token_post(server, form)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant", name
    with flood(server, client_id):
        during = {
            name: [token_post(server, form).status_code for _ in range(4)]
            for name, form in forged.items()
        }
    for statuses in during.values():
        # Turned away with the strangers, or, one that caught a token as the bucket refilled,
        # refused by the gateway: never granted.
        assert set(statuses) <= {400, 429}, statuses
    assert refresh(server, mine).status_code == 200  # none of them touched the client's family


def test_an_approved_client_refreshes_while_strangers_flood_the_token_endpoint(
    server: HttpServer, clients: tuple[MemoryTokens, MemoryTokens]
) -> None:
    mine, _ = clients
    client_id = mine.client.client_id
    with flood(server, client_id):
        answers = [refresh(server, mine) for _ in range(5)]
    assert [a.status_code for a in answers] == [200] * 5, [a.text for a in answers]
    assert len({a.json()["refresh_token"] for a in answers}) == 5  # rotated each time
    access = answers[-1].json()["access_token"]
    assert jwt.decode(access, options={"verify_signature": False})["sub"] == client_id


def test_a_just_approved_client_exchanges_its_code_during_a_flood(
    home: Path, server: HttpServer
) -> None:
    client_id = register_by_hand(server.url, "Late client")
    exchange = code_by_hand(home, server.url, client_id)
    SEEN.append(exchange["code"])
    with flood(server, client_id):
        answer = token_post(server, exchange)
    assert answer.status_code == 200, answer.text
    # A replayed code is refused and revokes what the first use issued, as before (answered
    # slow_down rather than invalid_grant while the flood's failures count at the gateway).
    again = token_post(server, exchange)
    assert again.json()["error"] in ("invalid_grant", "slow_down")
    assert mcp_post(server.url, answer.json()["access_token"], "tools/list").status_code == 401


def test_the_server_log_names_no_code_and_no_refresh_token(
    server: HttpServer, clients: tuple[MemoryTokens, MemoryTokens]
) -> None:
    assert len(SEEN) >= 2
    log = server.log()
    for token in SEEN:
        random_part, signature = token.split(".")
        assert random_part not in log and signature not in log
