"""OAuth grants end to end: a real `sp gateway run` on a real vault acts with the grant against
the real authorization server (harness/real_oidc.py), whose bearer-checked route is the declared
HTTPS operation. The grant is connected by `sp oauth connect` as the human runs it, by the code
flow with PKCE (the browser lands on sp's loopback listener) or by the device flow (the code
entered at the provider's page), the browser played over HTTP.

Proven here: the action runs with an access token minted in the gateway; twenty actions at once
while the token expires cause one refresh, and twenty refused with 401 one refresh and one retry
each; a refresh token spent elsewhere first kills the grant, which is reported with the remedy
(`sp oauth connect NAME`) and never retried; a grant the human revoked at the provider fails the
next action the same way, and `sp status` and `sp doctor` name the dead grant. No token or code
the provider issued appears in any result, journal (unsealed), log, file of the home, card, sp
output or `ps` line."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from harness.gateway import (
    PASSPHRASE,
    REPO,
    AgentProcess,
    Gateway,
    clean_env,
    decide,
    wait_card,
    wait_until,
)
from harness.oidc_browser import Browser
from harness.real_oidc import DEVICE_GRANT, PUBLIC_CLIENT, OidcProvider
from safeport.action_gateway.oauth.client import OAuthClient
from safeport.action_gateway.oauth.errors import OAuthGrantDead
from safeport.action_gateway.oauth.transport import OAuthHttp
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault import FileVaultBackend, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.cli.test_real_vault_e2e import sp
from tests.vault.vault_factory import FAST_KDF

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.oauth.broker"

pytestmark = pytest.mark.integration

NAME = "tracker"


def _policy(provider: OidcProvider) -> str:
    return f"""
[gateway]
approval_timeout_s = 10
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.{NAME}]
kind = "oauth"

[credentials.{NAME}.oauth]
issuer = "{provider.issuer}"
client_id = "{PUBLIC_CLIENT}"
scopes = ["openid", "profile"]
ca_file = "{provider.ca_file}"
allow_private_addresses = true
timeout_s = 10

[http.services.idp]
base_url = "https://localhost:{provider.port}"
credential = "{NAME}"
ca_file = "{provider.ca_file}"
allow_private_addresses = true

[http.services.idp.operations.whoami]
method = "GET"
path = "/api/whoami"
read_only = true
approval = "session"
response_fields = ["sub", "scope", "state"]

[http.services.idp.operations.echo]
method = "GET"
path = "/api/echo"
read_only = true
approval = "session"
response_fields = ["sub", "state", "authorization", "token", "note"]
"""


def _spec(provider: OidcProvider) -> OAuthGrantSpec:
    table = {
        "issuer": provider.issuer,
        "client_id": PUBLIC_CLIENT,
        "scopes": ["openid", "profile"],
        "ca_file": str(provider.ca_file),
        "allow_private_addresses": True,
    }
    return OAuthGrantSpec.model_validate(table)


def _client(provider: OidcProvider) -> OAuthClient:
    spec = _spec(provider)
    http = OAuthHttp(spec.ca_file, spec.timeout_s, spec.max_response_bytes, allow_private=True)
    return OAuthClient(spec, http)


def _connect(provider: OidcProvider, home: Path, account: str, *, device: bool) -> list[str]:
    """`sp oauth connect NAME` as the human runs it, the browser played by ``account``: the code
    flow's page opened from the `open:` line (the browser then lands on sp's loopback listener),
    or the device flow's code entered at the `visit:` page. Returns what sp printed."""
    argv = [sys.executable, "-m", "safeport", "oauth", "connect", NAME, "--no-browser", "--json",
            "--timeout", "60", "--passphrase-file", str(home / "pw")]  # fmt: skip
    if device:
        argv.append("--device")
    with subprocess.Popen(argv, cwd=REPO, env=clean_env(home), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as connect:  # fmt: skip
        assert connect.stderr is not None
        shown: dict[str, str] = {}
        for line in connect.stderr:
            key, _, value = line.strip().partition(": ")
            shown[key] = value
            if "open" in shown or ("code" in shown and "visit" in shown):
                break
        # The scopes asked for were shown before anything was opened.
        assert shown.get("scopes") == "openid profile", shown
        with Browser(provider.ca_file, account) as browser:
            if device:
                browser.approve_device(shown["visit"], shown["code"])
            else:
                browser.authorize(shown["open"], "http://127.0.0.1:", deliver=True)
        out, err = connect.communicate(timeout=60)
    assert connect.returncode == 0, err
    assert json.loads(out) == {"name": NAME, "scopes": ["openid", "profile"]}
    return [json.dumps(shown), out, err]


@dataclass
class Rig:
    home: Path
    gateway: Gateway  # a handle on the running gateway's sockets (not started by it)
    process: subprocess.Popen[bytes]
    agents: list[AgentProcess]  # three requesters: a connection has at most 8 requests running
    provider: OidcProvider
    said: list[str]  # every text the gateway showed anyone: replies, cards, ps lines
    cards: list[str] = field(default_factory=list)

    def whoami(self, request_id: str, operation: str = "whoami") -> dict[str, Any]:
        return {"v": 1, "id": request_id, "type": "propose", "action": "http_request",
                "service_id": "idp", "operation_id": operation, "args": {}}  # fmt: skip

    def call(self, request_id: str, operation: str = "whoami") -> dict[str, Any]:
        reply = self.agents[0].call(self.whoami(request_id, operation), timeout=30)
        self.said.append(json.dumps(reply))
        return reply

    def approve_session(self, agent: int = 0) -> dict[str, Any]:
        """An agent's first action raises its session card; approved, the action answers."""
        self.agents[agent].send(self.whoami(f"first-{agent}"))
        card = wait_card(self.gateway, timeout=15)
        self.cards.append(json.dumps(card))
        self.said.append(json.dumps(card))
        assert decide(self.gateway, card["id"])["ok"]
        reply = self.agents[agent].next(30)
        self.said.append(json.dumps(reply))
        return reply

    def at_once(self, count: int, prefix: str) -> list[dict[str, Any]]:
        """``count`` proposals sent back to back over the agents' connections, then their
        replies (the gateway works on each in a worker thread of its own)."""
        for n in range(count):
            self.agents[n % len(self.agents)].send(self.whoami(f"{prefix}{n}"))
        self.said.append(_ps())
        replies = [self.agents[n % len(self.agents)].next(60) for n in range(count)]
        self.said.extend(json.dumps(reply) for reply in replies)
        return replies

    def refreshes(self) -> list[dict[str, Any]]:
        return self.provider.token_requests("refresh_token")


def _ps() -> str:
    done = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, timeout=10)
    return done.stdout


class RigFor(Protocol):
    def __call__(self, account: str, *, device: bool = False) -> Rig: ...


@pytest.fixture
def rig_for(tmp_path: Path, oidc_provider: OidcProvider) -> Iterator[RigFor]:
    """``rig_for(account)``: a real gateway on a new vault, serving the policy, unlocked, the
    grant of ``account`` connected through `sp oauth connect` (``device``: by the device flow),
    and three agents. Everything said is checked for tokens at the end."""
    stack = contextlib.ExitStack()
    rigs: list[Rig] = []

    def start(account: str, *, device: bool = False) -> Rig:
        home = tmp_path / "h"
        home.mkdir(mode=0o700)
        (home / "pw").write_text(PASSPHRASE + "\n")
        FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF).init(
            SecretBytes(PASSPHRASE.encode())
        )
        (home / "gateway.toml").write_text(_policy(oidc_provider))
        process = stack.enter_context(_gateway_run(home, tmp_path / "gateway.stderr"))
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        agents = [AgentProcess(home, ["flock", "-s", str(home / "client.lock")]) for _ in range(3)]
        for agent in agents:
            stack.callback(agent.exit)
        said = [accepted.stdout, *_connect(oidc_provider, home, account, device=device)]
        rig = Rig(home, Gateway(home), process, agents, oidc_provider, said)
        rigs.append(rig)
        return rig

    with stack:
        yield start
    for rig in rigs:
        _never_said(rig)


@contextlib.contextmanager
def _gateway_run(home: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`sp gateway run`, its log to ``log`` (searched for tokens afterwards), then unlocked."""
    with log.open("ab") as err:
        process = subprocess.Popen(sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home),
                                   stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
    try:
        wait_until(lambda: sp(home, "gateway", "status").returncode == 0, timeout=20)
        unlocked = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
        assert unlocked.returncode == 0, unlocked.stderr
        yield process
    finally:
        if process.poll() is None:
            sp(home, "gateway", "stop")
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _never_said(rig: Rig) -> None:
    """No token or code the provider issued in anything the gateway said or wrote."""
    home = rig.home
    journals = sp(home, "audit", "show", "--unseal", "--passphrase-file", str(home / "pw"),
                  "--json", "--limit", "100000")  # fmt: skip
    assert journals.returncode == 0, journals.stderr
    # The bodies are read unsealed: the grant's records are there to be searched.
    assert '"oauth.connected"' in journals.stdout and '"grant": "tracker"' in journals.stdout
    texts = [journals.stdout, *rig.said]
    texts += [sp(home, "vault", "list", "--json").stdout, sp(home, "doctor").stdout]
    texts.append((home.parent / "gateway.stderr").read_text(errors="replace"))
    for path in home.rglob("*"):
        if path.is_file() and path.name != "vault.sp" and path.suffix != ".sock":
            texts.append(path.read_text(errors="replace"))
    joined = "\n".join(texts)
    issued = rig.provider.issued()
    assert issued
    leaked = [value for value in issued if value in joined]
    assert leaked == []


def test_a_code_flow_grant_acts_and_twenty_at_once_refresh_once(rig_for: RigFor) -> None:
    rig = rig_for("olivia")
    before = len(rig.refreshes())
    first = rig.approve_session()
    assert first.get("ok"), first
    assert first["result"]["status"] == 200
    assert first["result"]["fields"] == {"sub": "olivia", "scope": "openid profile", "state": "ok"}
    assert rig.approve_session(1).get("ok") and rig.approve_session(2).get("ok")
    assert rig.refreshes()[before:] == []  # the connect's access token serves until it expires
    # The card said whom the action acts as, with the scopes granted; so does `sp vault list`.
    assert len(rig.cards) == 3
    assert all(f"acts as {NAME} with scopes openid profile" in card for card in rig.cards)
    listed = json.loads(sp(rig.home, "vault", "list", "--json").stdout)
    assert [(e["name"], e["scopes"]) for e in listed if e["kind"] == "oauth"] == [
        (NAME, ["openid", "profile"])
    ]
    # A service that echoes the access token back: the whole result is withheld, as for any
    # credential a service echoes.
    echoed = rig.call("echo", "echo")
    assert not echoed.get("ok") and echoed["error"]["code"] == "upstream", echoed
    assert "echoed the credential" in echoed["error"]["reason"]
    assert rig.provider.issued("access_token")[-1] not in json.dumps(echoed)

    # The next access token lives 61 s: inside the gateway's refresh margin a second later. The
    # provider ends the current one so that the next action (a 401, then a refresh) gets it.
    rig.provider.set_access_token_ttl(61)
    assert rig.provider.drop_access_token(rig.provider.issued("access_token")[-1])
    assert rig.call("to-short-token").get("ok")
    issued_at = time.monotonic()
    rig.provider.set_access_token_ttl(3600)
    assert [r["status"] for r in rig.refreshes()[before:]] == [200]
    time.sleep(max(0.0, 1.2 - (time.monotonic() - issued_at)))
    replies = rig.at_once(20, "expiring-")
    assert all(reply.get("ok") for reply in replies), replies
    assert [r["status"] for r in rig.refreshes()[before:]] == [200, 200]
    assert {reply["result"]["fields"]["sub"] for reply in replies} == {"olivia"}

    # The provider ends the access token the gateway holds: every action meets a 401, and one
    # refresh serves their one retry each.
    assert rig.provider.drop_access_token(rig.provider.issued("access_token")[-1])
    resources = len(rig.provider.events("resource"))
    replies = rig.at_once(20, "refused-")
    assert all(reply.get("ok") for reply in replies), replies
    assert [r["status"] for r in rig.refreshes()[before:]] == [200, 200, 200]
    statuses = [e["status"] for e in rig.provider.events("resource")[resources:]]
    assert statuses.count(200) == 20 and 1 <= statuses.count(401) <= 20


def test_a_refresh_token_spent_elsewhere_kills_the_grant_once(rig_for: RigFor) -> None:
    rig = rig_for("peggy")
    assert rig.approve_session().get("ok")
    held = rig.provider.issued("access_token")[-1]  # the access token the gateway holds
    # A stolen copy of the vault's refresh token, used first by its thief.
    stolen = rig.provider.issued("refresh_token")[-1].encode()
    thief = _client(rig.provider).refresh(SecretBytes(stolen), None)
    # The gateway's access token ends: its next action refreshes with the spent token.
    assert rig.provider.drop_access_token(held)
    before = len(rig.refreshes())
    first = rig.call("after-theft")
    assert not first.get("ok"), first
    message = json.dumps(first["error"])
    assert "refused by its provider" in message and f"sp oauth connect {NAME}" in message
    for n in range(3):  # reported dead, not asked again
        reply = rig.call(f"again-{n}")
        assert not reply.get("ok") and f"sp oauth connect {NAME}" in json.dumps(reply["error"])
    refreshes = rig.refreshes()[before:]
    assert [(r["status"], r["error"]) for r in refreshes] == [(400, "invalid_grant")]
    _names_the_dead_grant(rig)
    # The provider took the reuse as theft: the thief's tokens died with the grant.
    with rig.provider.client() as http:
        bearer = {"Authorization": f"Bearer {thief.access_token.reveal().decode()}"}
        assert http.get(rig.provider.resource_url, headers=bearer).status_code == 401


def test_a_grant_revoked_at_the_provider_fails_the_next_action_naming_the_remedy(
    rig_for: RigFor,
) -> None:
    rig = rig_for("quentin")
    first = rig.approve_session()
    assert first.get("ok"), first
    assert rig.provider.revoke_account("quentin") >= 1
    before = len(rig.refreshes())
    reply = rig.call("after-revoke")
    assert not reply.get("ok"), reply
    assert f"sp oauth connect {NAME}" in json.dumps(reply["error"])
    assert [(r["status"], r["error"]) for r in rig.refreshes()[before:]] == [(400, "invalid_grant")]
    again = rig.call("again")
    assert f"sp oauth connect {NAME}" in json.dumps(again["error"])
    assert len(rig.refreshes()) == before + 1
    _names_the_dead_grant(rig)


def test_a_device_flow_grant_acts(rig_for: RigFor, oidc_provider: OidcProvider) -> None:
    before = len(oidc_provider.token_requests(DEVICE_GRANT))  # the provider is the session's
    rig = rig_for("rupert", device=True)
    polls = rig.provider.token_requests(DEVICE_GRANT)[before:]
    assert polls[-1]["status"] == 200
    # Polled at the provider's pace: no poll was told to slow down.
    assert not [p for p in polls if p.get("error") == "slow_down"]
    reply = rig.approve_session()
    assert reply.get("ok") and reply["result"]["fields"]["sub"] == "rupert", reply
    # `sp vault remove` revokes the grant at the provider (RFC 7009) before removing it.
    held = rig.provider.issued("refresh_token")[-1]
    revocations = len(rig.provider.events("token_revocation"))
    removed = sp(rig.home, "vault", "remove", NAME, "--passphrase-file", str(rig.home / "pw"))
    rig.said.append(removed.stdout + removed.stderr)
    assert removed.returncode == 0, removed.stderr
    assert [e["status"] for e in rig.provider.events("token_revocation")[revocations:]] == [200]
    with pytest.raises(OAuthGrantDead):
        _client(rig.provider).refresh(SecretBytes(held.encode()), None)
    after = rig.call("after-remove")
    assert not after.get("ok"), after


def _names_the_dead_grant(rig: Rig) -> None:
    for argv in (["status"], ["doctor"]):
        done = sp(rig.home, *argv)
        rig.said.append(done.stdout + done.stderr)
        assert NAME in done.stdout and f"sp oauth connect {NAME}" in done.stdout, done.stdout
