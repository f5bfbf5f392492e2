"""Secrets other than the policy's credential never reach the agent from an action's result.

A real gateway process runs its own SSH and HTTPS executor against the real sshd and TLS server:
a remote command prints a GitHub token, a PEM private key and a database URL with a password; a
service answers a declared field holding a token. The agent gets each replaced by its marker,
the lines beside them byte for byte, and a count with kinds and places; the outcome record
names the same places; no file the gateway wrote (journals, its log) holds a secret's bytes.
"""

from __future__ import annotations

import secrets
import string
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from harness.gateway import AgentProcess, Gateway, decide, wait_card
from harness.real_sshd import Sshd
from harness.real_tls import API_HOST, TlsServer

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.ladder"

pytestmark = pytest.mark.integration

ALPHABET = string.ascii_letters + string.digits


def _github_token() -> str:
    return "ghp_" + "".join(secrets.choice(ALPHABET) for _ in range(36))


def _pem_key() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


# What must come back unchanged: hashes, identifiers and ordinary text.
LEGITIMATE = [
    "service web is healthy",
    f"commit {secrets.token_hex(20)}",
    f"sha256:{secrets.token_hex(32)}",
    f"request {uuid.uuid4()}",
]


def _policy(sshd: Sshd, tls: TlsServer, script: Path) -> str:
    return f"""
[gateway]
approval_timeout_s = 30
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.session-key]
kind = "ssh-key"
approval = "session"

[credentials.deploy-token]
kind = "token"
approval = "session"

[ssh.hosts.box]
address = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
host_keys = ["{sshd.host_key_line}"]
credential = "session-key"

[ssh.hosts.box.commands.show_config]
argv = ["sh", "{script}"]

[http.services.api]
base_url = "{tls.base_url(API_HOST)}"
credential = "deploy-token"
ca_file = "{tls.ca_file}"
allow_private_addresses = true

[http.services.api.operations.app_config]
method = "GET"
path = "/v1/app-config"
response_fields = ["state", "database", "build"]
"""


@pytest.fixture
def planted(sshd: Sshd) -> Iterator[dict[str, str]]:
    """Secrets a remote script prints, on stdout and stderr, among legitimate lines."""
    found = {
        "token": _github_token(),
        "key": _pem_key(),
        "password": secrets.token_urlsafe(18),
    }
    script = sshd.shared_dir / f"show-config-{secrets.token_hex(4)}.sh"
    stdout = "\n".join([LEGITIMATE[0], f"GITHUB_TOKEN={found['token']}", *LEGITIMATE[1:]])
    script.write_text(
        f"cat <<'EOF'\n{stdout}\n{found['key']}EOF\n"
        f"echo 'db: postgres://app:{found['password']}@db.internal:5432/app' >&2\n"
    )
    script.chmod(0o644)
    found["script"] = str(script)
    try:
        yield found
    finally:
        script.unlink(missing_ok=True)


@pytest.fixture
def gateway(
    tmp_path: Path, sshd: Sshd, tls_server: TlsServer, planted: dict[str, str]
) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = Gateway(home)
    gw.write_policy(_policy(sshd, tls_server, Path(planted["script"])))
    gw.start("--real-executor", "--ssh-key-file", str(sshd.client_key_path))
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _approved(gw: Gateway, agent: AgentProcess, message: dict[str, Any]) -> dict[str, Any]:
    agent.send(message)
    assert decide(gw, wait_card(gw)["id"])["ok"]
    reply = agent.next(30)
    assert reply.get("ok"), reply
    return dict(reply["result"])


def _propose(request_id: str, **target: str) -> dict[str, Any]:
    action = "ssh_exec" if "host_id" in target else "http_request"
    return {"v": 1, "id": request_id, "type": "propose", "action": action, "args": {}, **target}


def _outcome_redactions(gw: Gateway) -> list[list[dict[str, Any]]]:
    return [
        list(r["body"].get("redacted", []))
        for r in gw.journal("actions")
        if r["kind"] == "action.outcome"
    ]


def _written_by_the_gateway(gw: Gateway) -> bytes:
    """Every file under the gateway's home: journals, its log, its state."""
    return b"".join(path.read_bytes() for path in sorted(gw.home.rglob("*")) if path.is_file())


def _key_body_lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def test_a_real_command_printing_a_token_a_private_key_and_a_db_password_returns_them_redacted(
    gateway: Gateway, planted: dict[str, str]
) -> None:
    agent = gateway.spawn_agent()
    result = _approved(gateway, agent, _propose("s1", host_id="box", command_id="show_config"))
    agent.exit()

    out, err = result["stdout"], result["stderr"]
    assert out.splitlines()[1] == "GITHUB_TOKEN=[REDACTED:github-token]"
    assert all(line in out.splitlines() for line in LEGITIMATE)  # byte for byte
    assert "[REDACTED:private-key]" in out and "-----BEGIN" not in out
    for secret in (planted["token"], planted["password"], *_key_body_lines(planted["key"])):
        assert secret not in out and secret not in err
    assert planted["password"] not in err and "[REDACTED:" in err

    kinds = {(r["field"], r["kind"]) for r in result["redactions"]}
    assert ("stdout", "github-token") in kinds and ("stdout", "private-key") in kinds
    assert any(field == "stderr" for field, _ in kinds)
    assert result["redacted"] == len(result["redactions"]) == 3
    assert next(r for r in result["redactions"] if r["kind"] == "github-token")["line"] == 2

    [journaled] = _outcome_redactions(gateway)
    assert journaled == result["redactions"]
    written = _written_by_the_gateway(gateway)
    for secret in (planted["token"], planted["password"], *_key_body_lines(planted["key"])):
        assert secret.encode() not in written


def test_a_real_service_answering_a_token_in_a_declared_field_returns_it_redacted(
    gateway: Gateway, tls_server: TlsServer
) -> None:
    token, password = _github_token(), secrets.token_urlsafe(18)
    commit, request = secrets.token_hex(20), str(uuid.uuid4())
    with tls_server.recorded.lock:
        tls_server.recorded.answers["/v1/app-config"] = {
            "state": "running",
            "database": {"url": f"postgres://app:{password}@db.internal:5432/app"},
            "build": {"commit": commit, "request": request, "token": token},
        }
    agent = gateway.spawn_agent()
    result = _approved(gateway, agent, _propose("h1", service_id="api", operation_id="app_config"))
    agent.exit()

    fields = result["fields"]
    assert fields["state"] == "running"
    assert fields["build"] == {
        "commit": commit,
        "request": request,
        "token": "[REDACTED:github-token]",
    }
    assert password not in repr(fields) and "[REDACTED:" in fields["database"]["url"]
    assert {r["field"] for r in result["redactions"]} == {"database.url", "build.token"}
    assert result["redacted"] == 2

    [journaled] = _outcome_redactions(gateway)
    assert journaled == result["redactions"]
    written = _written_by_the_gateway(gateway)
    assert token.encode() not in written and password.encode() not in written
