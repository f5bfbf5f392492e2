"""End to end: the HTTP server reuses the gateway's "this token stands" between revocations,
and every way a token stops standing is seen by the first request that starts after it
returns -- while the client keeps requesting, so a remembered answer is there to be misused.

Real gateway (`sp gateway run`), real `sp context serve --http`, the SDK's OAuth client for the
approval, plain HTTP requests for the hammering; the human's revocations are `sp` commands.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest

from harness.http_context import HttpServer, http_server
from harness.remote_flow import Browser, MemoryTokens, provider, read_remotely, sp
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    home = tmp_path_factory.mktemp("gw")
    home.chmod(0o700)
    with real_gateway(home) as process:
        yield home, process


@pytest.fixture(scope="module")
def home(gateway: tuple[Path, subprocess.Popen[str]]) -> Path:
    return gateway[0]


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with http_server(home, root, client=True) as running:
        yield running


@dataclass
class Approved:
    access: str
    refresh: str
    client_id: str


def approve(home: Path, server: HttpServer, name: str) -> Approved:
    browser, storage = Browser(home), MemoryTokens()
    auth = provider(server.url + "/mcp", browser, storage, client_name=name)
    anyio.run(read_remotely, server.url + "/mcp", auth, "legacy")
    assert storage.tokens is not None and storage.tokens.refresh_token is not None
    return Approved(
        storage.tokens.access_token, storage.tokens.refresh_token, storage.client.client_id
    )


def list_tools(url: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    return httpx.post(url + "/mcp", json=body, headers=headers, timeout=30).status_code


@dataclass
class Hammer:
    """A client that never stops asking: (started, status) for every request."""

    url: str
    token: str
    seen: list[tuple[float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            self.seen.append((started, list_tools(self.url, self.token)))

    def statuses_since(self, moment: float) -> list[int]:
        return [status for started, status in self.seen if started > moment]


def while_requesting(url: str, token: str, change: Callable[[], object]) -> Hammer:
    """Start requesting; once requests are being answered, make ``change``; go on for a
    moment after it returns. Returns the hammer, with ``changed_at`` set."""
    hammer = Hammer(url, token)
    thread = threading.Thread(target=hammer.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while sum(1 for _, s in hammer.seen if s == 200) < 20:
            assert time.monotonic() < deadline, hammer.seen[-5:]
            time.sleep(0.01)
        change()
        hammer.changed_at = time.monotonic()  # type: ignore[attr-defined]
        while len(hammer.statuses_since(hammer.changed_at)) < 5:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline + 30
            time.sleep(0.01)
    finally:
        hammer.stop.set()
        thread.join(30)
    return hammer


def after_change(hammer: Hammer) -> list[int]:
    return hammer.statuses_since(hammer.changed_at)  # type: ignore[attr-defined]


def test_the_notice_is_the_gateways_readable_and_not_writable_by_others(home: Path) -> None:
    notice = home / "run" / "revocations"
    info = notice.stat()
    assert stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()
    assert stat.S_IMODE(info.st_mode) == 0o644
    assert len(notice.read_text().strip()) == 32


def test_revoking_a_client_stops_it_at_the_first_request_after_the_revoke_returns(
    home: Path, server: HttpServer
) -> None:
    client = approve(home, server, "Hammering client")
    other = approve(home, server, "Bystander client")
    notice = (home / "run" / "revocations").read_text()
    hammer = while_requesting(
        server.url,
        client.access,
        lambda: sp(home, "context", "clients", "revoke", client.client_id),
    )
    assert (home / "run" / "revocations").read_text() != notice
    assert set(after_change(hammer)) == {401}, hammer.seen[-10:]
    assert list_tools(server.url, other.access) == 200  # the others go on


def test_a_reused_refresh_token_stops_the_access_token_at_the_next_request(
    home: Path, server: HttpServer
) -> None:
    client = approve(home, server, "Refreshing client")
    form = {"grant_type": "refresh_token", "client_id": client.client_id}
    rotated = httpx.post(server.url + "/token", data={**form, "refresh_token": client.refresh})
    assert rotated.status_code == 200, rotated.text
    access = rotated.json()["access_token"]

    def reuse() -> None:  # the rotated-away token again: a thief, or the client after one
        again = httpx.post(server.url + "/token", data={**form, "refresh_token": client.refresh})
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"

    hammer = while_requesting(server.url, access, reuse)
    assert set(after_change(hammer)) == {401}, hammer.seen[-10:]


def test_a_client_revoking_its_own_token_is_stopped_at_the_next_request(
    home: Path, server: HttpServer
) -> None:
    client = approve(home, server, "Leaving client")

    def revoke() -> None:  # RFC 7009, with the access token itself
        form = {"token": client.access, "client_id": client.client_id}
        assert httpx.post(server.url + "/revoke", data=form).status_code == 200

    hammer = while_requesting(server.url, client.access, revoke)
    assert set(after_change(hammer)) == {401}, hammer.seen[-10:]


def test_locking_the_vault_then_stopping_the_gateway_each_stop_requests_at_once(
    home: Path, server: HttpServer, gateway: tuple[Path, subprocess.Popen[str]]
) -> None:
    """Last in this module: it ends the gateway."""
    client = approve(home, server, "Locked-out client")
    hammer = while_requesting(server.url, client.access, lambda: sp(home, "vault", "lock"))
    assert set(after_change(hammer)) == {401}, hammer.seen[-10:]

    # With the gateway gone there is no word on any token: 503, not a remembered yes.
    sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
    fresh = approve(home, server, "Client at the stop")

    def stop() -> None:
        sp(home, "gateway", "stop", "--passphrase-file", str(home / "pw"))
        assert gateway[1].wait(30) == 0

    hammer = while_requesting(server.url, fresh.access, stop)
    assert set(after_change(hammer)) == {503}, hammer.seen[-10:]
    assert not (home / "run" / "revocations").exists()
