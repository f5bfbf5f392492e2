"""A real `sp gateway run` on a real vault, with one oauth credential whose provider is the
session's real authorization server (harness/real_oidc.py), connected through `sp oauth connect`
as the human runs it; three agents to act with it. The OAuth end-to-end tests use it through the
``rig_for`` fixture (conftest.py), which checks at the end that no token or code the provider
issued appears in any reply, unsealed journal, log, file of the home, card, sp output or `ps`
line."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

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
from harness.real_oidc import CONFIDENTIAL_CLIENT, PUBLIC_CLIENT, OidcProvider
from safeport.action_gateway.oauth.client import OAuthClient
from safeport.action_gateway.oauth.transport import OAuthHttp
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.shared.schemas.config_oauth import OAuthGrantSpec
from safeport.vault import FileVaultBackend, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.cli.test_real_vault_e2e import sp
from tests.vault.vault_factory import FAST_KDF

NAME = "tracker"


def policy(provider: OidcProvider, *, confidential: bool = False) -> str:
    client = f'"{CONFIDENTIAL_CLIENT}"\nclient_auth = "client_secret_basic"'
    return f"""
[gateway]
approval_timeout_s = 10
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.{NAME}]
kind = "oauth"

[credentials.{NAME}.oauth]
issuer = "{provider.issuer}"
client_id = {client if confidential else f'"{PUBLIC_CLIENT}"'}
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


def provider_client(provider: OidcProvider) -> OAuthClient:
    spec = _spec(provider)
    http = OAuthHttp(spec.ca_file, spec.timeout_s, spec.max_response_bytes, allow_private=True)
    return OAuthClient(spec, http)


def connect(
    provider: OidcProvider, home: Path, account: str, *, device: bool, secret: Path | None = None
) -> list[str]:
    """`sp oauth connect NAME` as the human runs it, the browser played by ``account``: the code
    flow's page opened from the `open:` line (the browser then lands on sp's loopback listener),
    or the device flow's code entered at the `visit:` page. Returns what sp printed."""
    argv = [sys.executable, "-m", "safeport", "oauth", "connect", NAME, "--no-browser", "--json",
            "--timeout", "60", "--passphrase-file", str(home / "pw")]  # fmt: skip
    if device:
        argv.append("--device")
    if secret is not None:  # a confidential client's secret, given as a human gives it
        argv += ["--client-secret-file", str(secret)]
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
    def __call__(
        self, account: str | None, *, device: bool = False, confidential: bool = False
    ) -> Rig: ...


@contextlib.contextmanager
def running_rigs(tmp_path: Path, oidc_provider: OidcProvider) -> Iterator[RigFor]:
    """``rig_for(account)``: a real gateway on a new vault, serving the policy, unlocked, the
    grant of ``account`` connected through `sp oauth connect` (``device``: by the device flow;
    ``account`` None: not connected; ``confidential``: as the confidential client, its secret
    given to `sp oauth connect`), and three agents. Everything said is checked for tokens and
    the client secret at the end."""
    stack = contextlib.ExitStack()
    rigs: list[Rig] = []

    def start(account: str | None, *, device: bool = False, confidential: bool = False) -> Rig:
        home = tmp_path / "h"
        home.mkdir(mode=0o700)
        (home / "pw").write_text(PASSPHRASE + "\n")
        FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF).init(
            SecretBytes(PASSPHRASE.encode())
        )
        (home / "gateway.toml").write_text(policy(oidc_provider, confidential=confidential))
        secret = None
        if confidential:
            secret = tmp_path / "client-secret"  # outside the home, which is searched
            secret.write_text(oidc_provider.client_secret + "\n")
        process = stack.enter_context(_gateway_run(home, tmp_path / "gateway.stderr"))
        accepted = sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        agents = [AgentProcess(home, ["flock", "-s", str(home / "client.lock")]) for _ in range(3)]
        for agent in agents:
            stack.callback(agent.exit)
        said = [accepted.stdout]
        if account is not None:
            said += connect(oidc_provider, home, account, device=device, secret=secret)
        rig = Rig(home, Gateway(home), process, agents, oidc_provider, said)
        rigs.append(rig)
        return rig

    with stack:
        yield start
    for rig in rigs:
        never_said(rig)


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


def never_said(rig: Rig) -> None:
    """No token or code the provider issued in anything the gateway said or wrote."""
    home = rig.home
    journals = sp(home, "audit", "show", "--unseal", "--passphrase-file", str(home / "pw"),
                  "--json", "--limit", "100000")  # fmt: skip
    assert journals.returncode == 0, journals.stderr
    # The bodies are read unsealed, so the grant's records are there to be searched.
    assert journals.stdout.strip() and "<sealed>" not in journals.stdout
    texts = [journals.stdout, *rig.said]
    texts += [sp(home, "vault", "list", "--json").stdout, sp(home, "doctor").stdout]
    texts.append((home.parent / "gateway.stderr").read_text(errors="replace"))
    for path in home.rglob("*"):
        if path.is_file() and path.name != "vault.sp" and path.suffix != ".sock":
            texts.append(path.read_text(errors="replace"))
    joined = "\n".join(texts)
    issued = [*rig.provider.issued(), rig.provider.client_secret]
    assert issued
    leaked = [value for value in issued if value in joined]
    assert leaked == []


def names_the_dead_grant(rig: Rig) -> None:
    for argv in (["status"], ["doctor"]):
        done = sp(rig.home, *argv)
        rig.said.append(done.stdout + done.stderr)
        assert NAME in done.stdout and f"sp oauth connect {NAME}" in done.stdout, done.stdout
