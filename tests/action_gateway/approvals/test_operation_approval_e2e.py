"""One credential, two approvals: reads approved once per session, every write on its own card.

A real gateway process runs its own HTTPS and SSH executor against the real TLS server and sshd.
The policy stores one token and one key, each left at the default (per call); the reads say
`approval = "session"` and `read_only = true`, the writes say nothing. One session card covers
every read of the process; each write asks again, and the session card says what it covers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import AgentProcess, Gateway, decide, wait_card
from harness.real_sshd import Sshd
from harness.real_tls import API_HOST, TlsServer

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.approvals"

pytestmark = pytest.mark.integration


def _policy(sshd: Sshd, tls: TlsServer) -> str:
    return f"""
[gateway]
approval_timeout_s = 5
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.api-token]
kind = "token"

[credentials.box-key]
kind = "ssh-key"

[http.services.api]
base_url = "{tls.base_url(API_HOST)}"
credential = "api-token"
ca_file = "{tls.ca_file}"
allow_private_addresses = true

[http.services.api.operations.get_deployment]
method = "GET"
path = "/v1/{{environment}}/services/web/status"
read_only = true
approval = "session"
response_fields = ["state"]
params.environment = {{ enum = ["staging", "production"] }}

[http.services.api.operations.create_issue]
method = "POST"
path = "/deploy"
json_body = {{ title = "{{title}}" }}
params.title = {{ pattern = "^[A-Za-z0-9 ]{{1,40}}$" }}

[ssh.hosts.box]
address = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
host_keys = ["{sshd.host_key_line}"]
credential = "box-key"

[ssh.hosts.box.commands.uptime]
argv = ["uptime"]
read_only = true
approval = "session"

[ssh.hosts.box.commands.touch_marker]
argv = ["true"]
"""


@pytest.fixture
def gateway(tmp_path: Path, sshd: Sshd, tls_server: TlsServer) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(_policy(sshd, tls_server))
    gw.start("--real-executor", "--ssh-key-file", str(sshd.client_key_path))
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _http(request_id: str, operation: str, **args: str) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "http_request",
            "service_id": "api", "operation_id": operation, "args": args}  # fmt: skip


def _ssh(request_id: str, command: str) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "ssh_exec",
            "host_id": "box", "command_id": command, "args": {}}  # fmt: skip


def _with_card(gw: Gateway, agent: AgentProcess, message: dict[str, Any]) -> dict[str, Any]:
    """Send, approve the one card it raises, and return that card."""
    agent.send(message)
    card = wait_card(gw)
    assert decide(gw, card["id"])["ok"]
    reply = agent.next(30)
    assert reply.get("ok"), reply
    return card


def _cards_decided(gw: Gateway) -> int:
    return gw.kinds("sessions").count("approval.decided")


def test_one_session_card_covers_the_reads_and_every_write_has_its_own_card(
    gateway: Gateway, tls_server: TlsServer
) -> None:
    before = len(tls_server.recorded.paths())  # the server is shared by the session's tests
    agent = gateway.spawn_agent()
    read = _with_card(gateway, agent, _http("r1", "get_deployment", environment="staging"))
    assert read["scope"] == "session" and read["credential"] == "api-token"
    assert "api.get_deployment" in read["scope_text"]
    assert "api.create_issue" not in read["scope_text"]
    for n, environment in enumerate(["production", "staging", "production"]):
        reply = agent.call(_http(f"r{n + 2}", "get_deployment", environment=environment))
        assert reply["ok"] and reply["result"]["status"] == 200, reply
    assert _cards_decided(gateway) == 1

    for n in range(2):
        write = _with_card(gateway, agent, _http(f"w{n}", "create_issue", title=f"issue {n}"))
        assert write["scope"] == "per-call" and write["scope_text"] == "this one request only"
    assert _cards_decided(gateway) == 3
    assert tls_server.recorded.paths()[before:].count("/deploy") == 2

    # The same on one SSH key: the read command rides its own session, the write asks each time.
    assert _with_card(gateway, agent, _ssh("s1", "uptime"))["scope"] == "session"
    assert agent.call(_ssh("s2", "uptime"))["ok"]
    assert _with_card(gateway, agent, _ssh("s3", "touch_marker"))["scope"] == "per-call"
    assert _with_card(gateway, agent, _ssh("s4", "touch_marker"))["scope"] == "per-call"
    assert _cards_decided(gateway) == 6
    agent.exit()


def test_a_write_unanswered_times_out_even_while_a_session_covers_the_reads(
    gateway: Gateway, tls_server: TlsServer
) -> None:
    agent = gateway.spawn_agent()
    _with_card(gateway, agent, _http("r1", "get_deployment", environment="staging"))
    before = len(tls_server.recorded.paths())
    refused = agent.call(_http("w1", "create_issue", title="unasked"))
    assert refused["error"]["code"] == "timeout"
    assert len(tls_server.recorded.paths()) == before
    agent.exit()


def test_the_catalog_tells_the_agent_each_actions_own_approval(gateway: Gateway) -> None:
    agent = gateway.spawn_agent()
    reply = agent.call({"v": 1, "id": "c", "type": "catalog"})
    agent.exit()
    approvals = {
        entry.get("operation_id") or entry.get("command_id"): entry["approval"]
        for entry in reply["result"]["actions"]
    }
    assert approvals == {
        "get_deployment": "session",
        "create_issue": "per-call",
        "uptime": "session",
        "touch_marker": "per-call",
    }
