"""`sp policy check` and the gateway run the same checks before a card: a service whose name
resolves to loopback without `allow_private_addresses`, or named by an IP literal, fails the
check naming the key, and the real gateway refuses its proposal without showing a card; with
the key set the same service gets a card and, approved, is called."""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.gateway import AgentProcess
from safeport.demo.tls_service import serve_demo_api
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors"

__all__ = ["home"]

TOKEN = b"tok-before-card-5e1"


def _policy(base_url: str, ca_pem: str, *, private: bool) -> str:
    allow = "allow_private_addresses = true\n" if private else ""
    return f"""[gateway]
approval_timeout_s = 20

[credentials.api-token]
kind = "token"

[http.services.api]
base_url = "{base_url}"
credential = "api-token"
{allow}ca_pem = \"\"\"
{ca_pem.strip()}
\"\"\"

[http.services.api.operations.status]
method = "GET"
path = "/v1/prod/services/web/status"
response_fields = ["state"]
"""


def _add_token(home: Path) -> None:
    (home / "token").write_bytes(TOKEN)
    added = sp(home, "vault", "add", "api-token", "--kind", "token", "--value-file",
               str(home / "token"), "--passphrase-file", str(home / "pw"))  # fmt: skip
    assert added.returncode == 0, added.stderr


def _propose(agent: AgentProcess, request_id: str) -> None:
    agent.send({"v": 1, "id": request_id, "type": "propose", "action": "http_request",
                "service_id": "api", "operation_id": "status", "args": {}})  # fmt: skip


def _cards(home: Path) -> list[dict[str, object]]:
    listed = sp(home, "approvals", "list", "--json").stdout.strip()
    return json.loads(listed) if listed else []


def test_policy_check_names_the_key_for_a_loopback_host_and_refuses_an_ip_literal(
    home: Path, tmp_path: Path
) -> None:
    with serve_demo_api(tmp_path, TOKEN) as service:
        pem = service.ca_file.read_text()
        text = _policy(service.base_url, pem, private=False)
        (home / "gateway.toml").write_text(text)
        done = sp(home, "policy", "check")
        assert done.returncode == 1, done.stdout
        key_line = text.splitlines().index("[http.services.api]") + 1  # where the key goes
        assert f"line {key_line}: http service 'api': localhost resolves now to 127.0.0.1, a " \
            "loopback address, which it may reach only with `allow_private_addresses = true`" \
            in done.stdout  # fmt: skip
        assert "fix: set `allow_private_addresses = true` under [http.services.api]" in done.stdout
        (home / "gateway.toml").write_text(_policy(service.base_url, pem, private=True))
        allowed = sp(home, "policy", "check")
        assert allowed.returncode == 0, allowed.stdout
        literal = service.base_url.replace("localhost", "127.0.0.1")
        (home / "gateway.toml").write_text(_policy(literal, pem, private=True))
        refused = sp(home, "policy", "check", "--json")
        assert refused.returncode == 1
        messages = [p["message"] for p in json.loads(refused.stdout)["problems"]]
        assert messages == [
            "http service 'api': the host is an IP literal; a service must be named by a DNS name"
        ]
        bad_pem = pem.replace("MII", "XXX", 1)
        (home / "gateway.toml").write_text(_policy(service.base_url, bad_pem, private=True))
        unusable = sp(home, "policy", "check")
        assert unusable.returncode == 1
        assert "http service 'api': its ca_pem cannot be read as PEM" in unusable.stdout


def test_the_gateway_refuses_a_loopback_service_before_any_card_and_cards_it_when_allowed(
    home: Path, tmp_path: Path
) -> None:
    _add_token(home)
    pw = str(home / "pw")
    with serve_demo_api(tmp_path, TOKEN) as service, running_gateway(home):
        pem = service.ca_file.read_text()
        (home / "gateway.toml").write_text(_policy(service.base_url, pem, private=False))
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        agent = AgentProcess(home, ["flock", str(home / "client.lock")])
        started = time.monotonic()
        _propose(agent, "p1")
        reply = agent.next(20)
        # Answered at once: a card would have held the reply until approval_timeout_s (20 s).
        assert time.monotonic() - started < 10
        assert reply["error"]["code"] == "denied"
        assert "allow_private_addresses" in reply["error"]["reason"]
        assert "resolves now to 127.0.0.1, a loopback address" in reply["error"]["reason"]
        assert _cards(home) == []

        # The legitimate side: the same service with the key set gets a card and runs.
        (home / "gateway.toml").write_text(_policy(service.base_url, pem, private=True))
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        _propose(agent, "p2")
        cards: list[dict[str, object]] = []
        deadline = time.monotonic() + 20
        while not cards and time.monotonic() < deadline:
            cards = _cards(home)
            time.sleep(0.1)
        assert len(cards) == 1
        approved = sp(home, "approvals", "approve", str(cards[0]["id"]), "--passphrase-file", pw)
        assert approved.returncode == 0, approved.stderr
        reply = agent.next(30)
        assert reply["result"]["status"] == 200
        assert reply["result"]["fields"] == {"state": "running"}
        agent.exit()
