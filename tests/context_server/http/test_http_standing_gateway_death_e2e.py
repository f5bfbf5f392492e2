"""A gateway that dies without a word (SIGKILL, an OOM kill, a crash) leaves its revocation
notice behind, unchanged: a remembered "stands" must not outlive it. Every token that gateway
issued is dead (a restart forgets every family), and while no gateway answers, a request is
refused (503), as when every request asked.

Real gateway (`sp gateway run`), real `sp context serve --http`, a client that keeps
requesting, the gateway killed with SIGKILL.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from harness.gateway import REPO, clean_env, wait_until
from harness.http_context import http_server
from harness.remote_flow import sp
from safeport.shared.launch import sp_command
from tests.context_server.http.real_gateway import real_gateway
from tests.context_server.http.test_http_standing_e2e import (
    after_change,
    approve,
    list_tools,
    while_requesting,
)
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.http"


def _home(factory: pytest.TempPathFactory, name: str) -> Path:
    home = factory.mktemp(name)
    home.chmod(0o700)
    return home


def test_a_gateway_killed_without_a_word_is_not_vouched_for_by_a_remembered_answer(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = _home(tmp_path_factory, "gw-kill")
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with real_gateway(home) as gateway, http_server(home, root, client=True) as server:
        client = approve(home, server, "Client at the crash")
        notice = (home / "run" / "revocations").read_text()

        def kill() -> None:
            gateway.kill()  # SIGKILL: no stop, no lock, no withdrawal
            gateway.wait(10)

        hammer = while_requesting(server.url, client.access, kill)
        # The notice outlived its gateway, with the value the HTTP server remembered.
        assert (home / "run" / "revocations").read_text() == notice
        statuses = after_change(hammer)
        # Every request that started after the gateway was gone (reaped) has no gateway's
        # word behind it: 503. (Trusting the notice alone served 200s for up to 2 s here.)
        assert set(statuses) == {503}, statuses[:20]


def test_what_a_killed_gateway_vouched_for_does_not_survive_into_the_next_one(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Held: the next gateway publishes a new value before it answers anything."""
    home = _home(tmp_path_factory, "gw-restart")
    root, _ = small_workspace(tmp_path_factory.mktemp("ws"))
    with real_gateway(home) as gateway, http_server(home, root, client=True) as server:
        client = approve(home, server, "Client across a restart")
        assert list_tools(server.url, client.access) == 200
        gateway.kill()
        gateway.wait(10)
        errors = (home / "gateway-2.stderr").open("w")
        again = subprocess.Popen(
            sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home), stderr=errors
        )
        try:
            wait_until(lambda: sp(home, "gateway", "status", check=False).returncode == 0, 20)
            started = time.monotonic()
            seen = []
            while time.monotonic() - started < 3:
                seen.append(list_tools(server.url, client.access))
            assert 200 not in seen, seen
            sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
            assert list_tools(server.url, client.access) == 401  # unknown to this gateway
        finally:
            sp(home, "gateway", "stop", check=False)
            again.wait(15)
            errors.close()
