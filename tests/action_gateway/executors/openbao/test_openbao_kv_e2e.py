"""A credential that lives in OpenBao: read after approval, used for one HTTPS call, journaled.

A real gateway process (its own HTTPS executor) logs in to a real OpenBao server with an AppRole
whose secret id is in the local vault, reads the KV v2 secret the policy names only once a
human approved, and sends it to the real TLS server. The card says where the credential comes
from; the journal says which version was read; the value is nowhere but at the TLS server.
Beside each legitimate use, its attack: a path smuggled through the arguments, a wrong secret
id, an unreachable or slow server, a certificate off the pin.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import Gateway, decide, wait_card
from harness.real_openbao import GATEWAY_POLICY, KV_FIELD, KV_PATH, OpenBao
from harness.real_tls import API_HOST, TlsServer

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.openbao"

pytestmark = pytest.mark.integration


def bao_policy(bao: OpenBao, tls: TlsServer, *, address: str | None = None,
               ca_file: Path | None = None, timeout_s: int = 5) -> str:  # fmt: skip
    return f"""
[gateway]
approval_timeout_s = 5
auto_lock_minutes = 0

[sources.openbao.team]
address = "{address or bao.address}"
ca_file = "{ca_file or bao.ca_file}"
timeout_s = {timeout_s}
auth = {{ method = "approle", role_id = "{bao.role_id}", secret_id_credential = "bao-secret-id" }}

[credentials.bao-secret-id]
kind = "token"

[credentials.api-token]
kind = "token"
source = "team"
kv_path = "{KV_PATH}"
kv_field = "{KV_FIELD}"

[http.services.api]
base_url = "{tls.base_url(API_HOST)}"
credential = "api-token"
ca_file = "{tls.ca_file}"
allow_private_addresses = true

[http.services.api.operations.echo]
method = "GET"
path = "/echo-headers"
response_fields = ["note"]

[http.services.api.operations.status]
method = "GET"
path = "/v1/{{environment}}/services/web/status"
response_fields = ["state"]
params.environment = {{ pattern = "^[a-z/._-]{{1,60}}$" }}
"""


def start_gateway(home: Path, policy: str, secret_id_file: Path) -> Gateway:
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(policy)
    gw.start("--real-executor", "--vault-token-file", f"bao-secret-id={secret_id_file}")
    gw.unlock()
    gw.accept_policy()
    return gw


@pytest.fixture
def secret_id_file(tmp_path: Path, openbao: OpenBao) -> Path:
    path = tmp_path / "secret-id"
    path.write_text(openbao.new_secret_id())
    return path


@pytest.fixture
def gateway(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> Iterator[Gateway]:
    gw = start_gateway(tmp_path / "h", bao_policy(openbao, tls_server), secret_id_file)
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def http(request_id: str, operation: str, **args: str) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "http_request",
            "service_id": "api", "operation_id": operation, "args": args}  # fmt: skip


def audit_entries(bao: OpenBao) -> list[dict[str, Any]]:
    return [json.loads(line) for line in bao.audit_text().splitlines() if line.strip()]


def gateway_reads(bao: OpenBao) -> list[dict[str, Any]]:
    """The gateway's (the AppRole's) reads of the KV secret, as OpenBao audited them."""
    return [
        e for e in audit_entries(bao)
        if e.get("type") == "request" and e["request"]["path"] == f"secret/data/{KV_PATH}"
        and (e.get("auth") or {}).get("display_name") == "approle"
    ]  # fmt: skip


def everything_written(gw: Gateway) -> str:
    """Every journal, the gateway's log and its record: where a value must never be."""
    texts = [gw.stderr_path.read_text(errors="replace")]
    texts += [path.read_text(errors="replace") for path in (gw.home / "audit").glob("*.jsonl")]
    if gw.record_path.exists():
        texts.append(gw.record_path.read_text(errors="replace"))
    return "\n".join(texts)


def test_an_approved_call_reads_the_kv_secret_once_and_sends_it_only_to_the_service(
    gateway: Gateway, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> None:
    before = len(tls_server.recorded.requests)
    agent = gateway.spawn_agent()
    agent.send(http("k1", "echo"))
    card = wait_card(gateway)
    fields = dict(card["fields"])
    assert fields["credential from"] == (
        f"OpenBao team: secret/{KV_PATH} field {KV_FIELD} (read for this call only)"
    )
    reads_before_yes = len(gateway_reads(openbao))
    assert decide(gateway, card["id"])["ok"]
    reply = agent.next(30)
    agent.exit()
    assert reply["ok"] and reply["result"]["fields"] == {"note": "hello"}, reply
    # The value was read only after the yes, and reached the service as the bearer token.
    assert reads_before_yes == 0 and len(gateway_reads(openbao)) == 1
    sent = tls_server.recorded.requests[before:]
    assert [r["headers"]["Authorization"] for r in sent] == [f"Bearer {openbao.kv_value}"]
    outcomes = [r for r in gateway.journal("actions") if r["kind"] == "action.outcome"]
    assert len(outcomes) == 1
    body = outcomes[0]["body"]["credential"]
    assert body["source"] == "team" and body["kv"] == f"secret/{KV_PATH}"
    assert isinstance(body["version"], int) and body["version"] >= 1
    written = everything_written(gateway)
    assert openbao.kv_value not in written and openbao.kv_value not in json.dumps(reply)
    assert secret_id_file.read_text() not in written  # the AppRole's secret id neither


def test_a_path_smuggled_through_an_argument_only_reaches_the_service_url(
    gateway: Gateway, openbao: OpenBao, tls_server: TlsServer
) -> None:
    # The argument is the agent's; the KV path is the policy's. A value that looks like an
    # OpenBao path changes the service URL (percent-encoded), never what the gateway reads.
    agent = gateway.spawn_agent()
    agent.send(http("s1", "status", environment="secret/data/other"))
    card = wait_card(gateway)
    assert dict(card["fields"])["credential from"].startswith(f"OpenBao team: secret/{KV_PATH} ")
    assert decide(gateway, card["id"])["ok"]
    agent.next(30)
    agent.exit()
    paths = {e["request"]["path"] for e in audit_entries(openbao) if e.get("type") == "request"}
    assert not any("other" in path for path in paths)
    assert any(
        r["path"].startswith("/v1/secret%2Fdata%2Fother/") for r in tls_server.recorded.requests
    )


def test_the_audit_log_shows_only_the_gateways_reads_of_its_declared_paths(
    gateway: Gateway, openbao: OpenBao
) -> None:
    agent = gateway.spawn_agent()
    agent.send(http("a1", "echo"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next(30)["ok"]
    agent.exit()
    gateway_requests = [
        e["request"] for e in audit_entries(openbao)
        if e.get("type") == "request" and (e.get("auth") or {}).get("display_name") == "approle"
    ]  # fmt: skip
    assert gateway_requests, "the gateway's requests are audited"
    allowed = {
        f"secret/data/{KV_PATH}",
        "auth/token/lookup-self",
        "sys/seal-status",
        "sys/capabilities-self",
        "sys/leases/revoke",
    }
    assert {r["path"] for r in gateway_requests} <= allowed
    # OpenBao writes values into its audit log only as HMACs.
    assert openbao.kv_value not in openbao.audit_text()


def test_a_wrong_secret_id_is_refused_before_any_card_and_names_the_fix(
    gateway: Gateway, secret_id_file: Path, openbao: OpenBao, tls_server: TlsServer
) -> None:
    before = len(tls_server.recorded.requests)
    secret_id_file.write_text("00000000-0000-0000-0000-000000000000")
    agent = gateway.spawn_agent()
    refused = agent.call(http("w1", "echo"))
    assert refused["error"]["code"] == "upstream", refused
    assert "refused the gateway's login" in refused["error"]["reason"]
    assert gateway.control("approvals.list")["result"]["cards"] == []
    # The legitimate use beside it: a fresh secret id, and the same call goes through.
    secret_id_file.write_text(openbao.new_secret_id())
    agent.send(http("w2", "echo"))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    assert agent.next(30)["ok"]
    agent.exit()
    assert len(tls_server.recorded.requests) == before + 1


def test_an_expired_secret_id_is_refused_like_a_wrong_one(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer
) -> None:
    secret_id = tmp_path / "expired"
    secret_id.write_text(openbao.new_secret_id(ttl="1s"))
    import time

    time.sleep(2)
    gw = start_gateway(tmp_path / "h", bao_policy(openbao, tls_server), secret_id)
    try:
        agent = gw.spawn_agent()
        refused = agent.call(http("e1", "echo"))
        agent.exit()
        assert refused["error"]["code"] == "upstream"
        assert "refused the gateway's login" in refused["error"]["reason"]
        assert gw.control("approvals.list")["result"]["cards"] == []
    finally:
        assert gw.stop() == 0


def test_an_unreachable_server_is_refused_before_a_card_and_nothing_falls_back(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    policy = bao_policy(openbao, tls_server, address=f"https://127.0.0.1:{port}")
    gw = start_gateway(tmp_path / "h", policy, secret_id_file)
    before = len(tls_server.recorded.requests)
    try:
        agent = gw.spawn_agent()
        refused = agent.call(http("u1", "echo"))
        agent.exit()
        assert refused["error"]["code"] == "upstream"
        assert "is unreachable" in refused["error"]["reason"]
        assert gw.control("approvals.list")["result"]["cards"] == []
        assert len(tls_server.recorded.requests) == before
        assert not any("vault.secret" in str(r) and "api-token" in str(r) for r in gw.touched())
    finally:
        assert gw.stop() == 0


def test_a_server_whose_certificate_is_off_the_pin_is_refused(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> None:
    # The TLS test server's CA is a real CA, just not the one the policy pins for OpenBao.
    policy = bao_policy(openbao, tls_server, ca_file=tls_server.ca_file)
    gw = start_gateway(tmp_path / "h", policy, secret_id_file)
    try:
        agent = gw.spawn_agent()
        refused = agent.call(http("t1", "echo"))
        agent.exit()
        assert refused["error"]["code"] == "upstream"
        assert "does not chain to its pinned ca_file" in refused["error"]["reason"]
        assert gw.control("approvals.list")["result"]["cards"] == []
    finally:
        assert gw.stop() == 0


def test_a_server_that_answers_too_slowly_is_refused_within_its_timeout(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> None:
    # A listener that accepts and never answers: the TLS handshake itself stalls.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    address = f"https://127.0.0.1:{silent.getsockname()[1]}"
    gw = start_gateway(tmp_path / "h", bao_policy(openbao, tls_server, address=address,
                                                  timeout_s=1), secret_id_file)  # fmt: skip
    try:
        agent = gw.spawn_agent()
        refused = agent.call(http("slow", "echo"), timeout=20)
        agent.exit()
        assert refused["error"]["code"] == "upstream"
        assert "did not answer in time" in refused["error"]["reason"]
        assert gw.control("approvals.list")["result"]["cards"] == []
    finally:
        stop.set()
        silent.close()
        for conn in held:
            conn.close()
        assert gw.stop() == 0


def test_a_token_file_others_can_read_is_refused_and_a_private_one_serves(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer, secret_id_file: Path
) -> None:
    created: Any = openbao.root().auth.token.create(policies=[GATEWAY_POLICY], ttl="10m")
    token = str(created["auth"]["client_token"])
    token_file = tmp_path / "bao-token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o644)
    policy = bao_policy(openbao, tls_server).replace(
        f'auth = {{ method = "approle", role_id = "{openbao.role_id}", '
        'secret_id_credential = "bao-secret-id" }',
        f'auth = {{ method = "token-file", token_file = "{token_file}" }}',
    )
    gw = start_gateway(tmp_path / "h", policy, secret_id_file)
    try:
        agent = gw.spawn_agent()
        refused = agent.call(http("f1", "echo"))
        assert refused["error"]["code"] == "upstream"
        assert "token_file is readable by others" in refused["error"]["reason"]
        assert gw.control("approvals.list")["result"]["cards"] == []
        token_file.chmod(0o600)  # the legitimate use: only the gateway's account reads it
        agent.send(http("f2", "echo"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        assert agent.next(30)["ok"]
        agent.exit()
        assert token not in everything_written(gw)
        assert secret_id_file.read_text() not in everything_written(gw)
    finally:
        assert gw.stop() == 0


def test_a_namespace_is_where_the_login_and_the_read_happen(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer
) -> None:
    name = f"ns-{tmp_path.name[-8:].replace('_', '-')}"
    role_id, kv_value, secret_id = openbao.namespace(name)
    secret_id_file = tmp_path / "ns-secret-id"
    secret_id_file.write_text(secret_id)
    outside = bao_policy(openbao, tls_server).replace(openbao.role_id, role_id)
    inside = outside.replace(
        'auth = { method = "approle"', f'namespace = "{name}"\nauth = {{ method = "approle"'
    )
    # Without the namespace the AppRole is unknown: refused before a card.
    gw = start_gateway(tmp_path / "h1", outside, secret_id_file)
    try:
        agent = gw.spawn_agent()
        assert "refused the gateway's login" in agent.call(http("o1", "echo"))["error"]["reason"]
        agent.exit()
    finally:
        assert gw.stop() == 0
    before = len(tls_server.recorded.requests)
    gw = start_gateway(tmp_path / "h2", inside, secret_id_file)
    try:
        agent = gw.spawn_agent()
        agent.send(http("n1", "echo"))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        assert agent.next(30)["ok"]
        agent.exit()
        sent = tls_server.recorded.requests[before:]
        assert [r["headers"]["Authorization"] for r in sent] == [f"Bearer {kv_value}"]
    finally:
        assert gw.stop() == 0
