"""SSH with a certificate made for one action: a fresh key pair, signed by OpenBao's SSH engine.

The sshd trusts OpenBao's CA (``TrustedUserCAKeys``) and holds no authorized key for anyone, so
no long-lived private key can log in. A real gateway makes a key pair per approved action, has
the SSH role sign it for the host's user with a TTL of a minute, logs in with it once and
forgets it. Beside it, the attacks: a certificate kept and used after its TTL, a certificate
for another principal, a stored key the host never trusted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hvac.exceptions
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from harness.gateway import Gateway, decide, wait_card
from harness.real_openbao import SSH_ROLE, OpenBao
from harness.real_sshd import Sshd
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.transport import open_transport
from safeport.shared.schemas.config import SshHost
from safeport.vault.secrets import SecretBytes, SshKeySecret
from tests.action_gateway.executors.openbao.test_openbao_kv_e2e import everything_written

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.openbao"

pytestmark = pytest.mark.integration


def ssh_policy(bao: OpenBao, sshd: Sshd) -> str:
    return f"""
[gateway]
approval_timeout_s = 5
auto_lock_minutes = 0

[sources.openbao.team]
address = "{bao.address}"
ca_file = "{bao.ca_file}"
auth = {{ method = "approle", role_id = "{bao.role_id}", secret_id_credential = "bao-secret-id" }}

[credentials.bao-secret-id]
kind = "token"

[credentials.box-cert]
kind = "ssh-key"
source = "team"
ssh_role = "{SSH_ROLE}"
ttl_s = 60

[ssh.hosts.box]
address = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
host_keys = ["{sshd.host_key_line}"]
credential = "box-cert"

[ssh.hosts.box.commands.whoami]
argv = ["id", "-un"]
read_only = true
"""


@pytest.fixture
def gateway(tmp_path: Path, openbao: OpenBao, ca_sshd: Sshd) -> Iterator[Gateway]:
    secret_id = tmp_path / "secret-id"
    secret_id.write_text(openbao.new_secret_id())
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(ssh_policy(openbao, ca_sshd))
    gw.start("--real-executor", "--vault-token-file", f"bao-secret-id={secret_id}")
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def whoami(request_id: str) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "ssh_exec",
            "host_id": "box", "command_id": "whoami", "args": {}}  # fmt: skip


def host(sshd: Sshd) -> SshHost:
    return SshHost(
        address="127.0.0.1",
        port=sshd.port,
        user=sshd.user,
        host_keys=[sshd.host_key_line],
        credential="box-cert",
        connect_timeout_s=5,
    )


def signed_secret(bao: OpenBao, principal: str, ttl: str) -> SshKeySecret:
    """A key signed by the same role, as someone holding a copy of a certificate would have."""
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    answer: Any = bao.root().write_data(
        f"ssh/sign/{SSH_ROLE}",
        data={"public_key": public.decode(), "valid_principals": principal, "ttl": ttl},
    )
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    return SshKeySecret(SecretBytes(private), certificate=answer["data"]["signed_key"].encode())


def test_each_approved_action_logs_in_with_its_own_fresh_certificate(
    gateway: Gateway, ca_sshd: Sshd
) -> None:
    agent = gateway.spawn_agent()
    for n in range(2):
        agent.send(whoami(f"c{n}"))
        card = wait_card(gateway)
        origin = dict(card["fields"])["credential from"]
        assert origin == f"OpenBao team: a new key signed by ssh/sign/{SSH_ROLE}, valid 60 s"
        assert decide(gateway, card["id"])["ok"]
        reply = agent.next(30)
        assert reply["ok"] and reply["result"]["stdout"].strip() == ca_sshd.user, reply
    agent.exit()
    issued = [
        r["body"]["credential"] for r in gateway.journal("actions") if r["kind"] == "action.outcome"
    ]
    assert [body["principals"] for body in issued] == [[ca_sshd.user], [ca_sshd.user]]
    assert all(body["ttl_s"] == 60 for body in issued)
    serials = {body["serial"] for body in issued}
    assert len(serials) == 2 and "" not in serials  # one certificate per action
    written = everything_written(gateway)
    assert "PRIVATE KEY" not in written and "-cert-v01@openssh.com" not in written


def test_a_certificate_kept_past_its_ttl_no_longer_logs_in(openbao: OpenBao, ca_sshd: Sshd) -> None:
    secret = signed_secret(openbao, ca_sshd.user, "3s")
    # Within its TTL the same certificate is let in: the legitimate use.
    open_transport("box", host(ca_sshd), secret).close()
    time.sleep(4)
    with pytest.raises(ActionError) as refused:
        open_transport("box", host(ca_sshd), secret).close()
    assert refused.value.failure == "auth_failed"


def test_the_role_signs_only_the_principals_it_allows(openbao: OpenBao, ca_sshd: Sshd) -> None:
    # The gateway asks for the host's user from the policy; a role that allows only that user
    # refuses to sign for root, whoever asks.
    with pytest.raises(hvac.exceptions.InvalidRequest):
        signed_secret(openbao, "root", "60s")
    open_transport("box", host(ca_sshd), signed_secret(openbao, ca_sshd.user, "60s")).close()


def test_a_stored_key_the_host_never_trusted_cannot_log_in(ca_sshd: Sshd) -> None:
    # The host reads no authorized key: the harness's client key, valid elsewhere, is refused.
    with pytest.raises(ActionError) as refused:
        open_transport("box", host(ca_sshd), ca_sshd.secret()).close()
    assert refused.value.failure == "auth_failed"
