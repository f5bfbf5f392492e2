"""End to end (the real gateway and `sp context serve --http`): a stranger who saw one code of a
client -- the one in the redirect URL of its first authorization -- replays it to /token while
flooding the public URL. The gateway refuses the code (and revokes what it issued). The charge
never asks the gateway, so a replay must be billed to that spent grant's own bucket, never to
the client's, which its bearer requests use: the client, authorized again with a good access
token, must still be served."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.http_context import HttpServer, http_server
from harness.remote_flow import code_by_hand, register_by_hand
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.http.test_http_oauth_e2e import mcp_post
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"

META = "/.well-known/oauth-protected-resource/mcp"


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


def authorized(home: Path, server: HttpServer, client_id: str) -> tuple[dict[str, str], str]:
    """One authorization of ``client_id``: its (now spent) code exchange and the access token."""
    exchange = code_by_hand(home, server.url, client_id)
    answer = httpx.post(server.url + "/token", data=exchange, timeout=30)
    assert answer.status_code == 200, answer.text
    return exchange, answer.json()["access_token"]


def test_a_stranger_replaying_a_spent_code_does_not_starve_the_clients_bearer_requests(
    home: Path, server: HttpServer
) -> None:
    client_id = register_by_hand(server.url, "Victim client")
    leaked, _ = authorized(home, server, client_id)  # its code ends up in a log
    _, access = authorized(home, server, client_id)  # the client as it stands now
    assert mcp_post(server.url, access, "tools/list").status_code == 200

    stop, codes = threading.Event(), list[int]()
    # The stranger knows the code and the client id; not the verifier (it needs none).
    replay = {k: leaked[k] for k in ("grant_type", "code", "client_id")}

    def stranger() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            while not stop.is_set():
                codes.append(http.get(META).status_code)
                for _ in range(4):
                    codes.append(http.post("/token", data=replay).status_code)

    # Enough connections in flight that the replays outrun the client bucket's refill (50/s)
    # while the gateway takes its time refusing them (the server admits 256 at once).
    threads = [threading.Thread(target=stranger) for _ in range(48)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(5.0)  # past both bursts: the anonymous one (60) and the client's (200)
        mine = []
        for _ in range(10):
            mine.append(mcp_post(server.url, access, "tools/list").status_code)
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
    assert codes.count(429) > len(codes) // 2, "the flood is real"
    assert 429 not in mine, f"the client's own requests were refused: {mine}"
    assert mine == [200] * 10, mine
