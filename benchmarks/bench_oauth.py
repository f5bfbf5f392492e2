"""An action on an OAuth grant beside the same action on a token credential, in one run.

    python benchmarks/bench_oauth.py [--rounds 300]
    python benchmarks/bench_oauth.py --quick      # 60 rounds

Starts the real authorization server the tests use (`oidc-provider`, harness/real_oidc.py, TLS
from its own test CA) and a real gateway process with a real vault and its own HTTPS executor.
Two grants are connected first by the code flow with PKCE, driven the way the tests drive the
browser: one is stored as an `oauth` credential (its refresh token), the other's access token as
a plain `token` credential. Two services call the same protected resource of the provider
(`GET /api/whoami`, which checks the bearer against the provider's own token store), one with
each credential. Then, counting token-endpoint requests in the provider's event log:

1. the first action on the grant: the gateway holds no access token yet, so it refreshes; one
   token request;
2. the access token due for refresh (issued for 4 s; the gateway refreshes 60 s ahead of
   expiry, or halfway through a shorter life), then a burst of actions: one refresh for the
   burst, one token request;
3. the provider ends the access token early: the service answers 401, and the gateway
   refreshes and retries the action once; one token request;
4. ``--rounds`` actions on each service, alternating, so both see the same load: p50 and p99 of
   each, their ratio (ours / peer, budget <= 1.1), and the token requests made (0: the access
   token is cached in the gateway's memory).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.gateway import PASSPHRASE, AgentProcess, Gateway, clean_env, decide, wait_card  # noqa: E402
from harness.oidc_browser import Browser  # noqa: E402
from harness.real_oidc import HOST_NAME, PUBLIC_CLIENT, OidcProvider, running_oidc_provider  # noqa: E402
from safeport.action_gateway.oauth.client import OAuthClient  # noqa: E402
from safeport.action_gateway.oauth.protocol import TokenGrant  # noqa: E402
from safeport.action_gateway.oauth.transport import OAuthHttp  # noqa: E402
from safeport.shared.paths import locate  # noqa: E402
from safeport.shared.schemas.config_oauth import OAuthGrantSpec  # noqa: E402
from safeport.vault import KdfParams, VaultFile  # noqa: E402
from safeport.vault.secrets import SecretBytes  # noqa: E402

CALLBACK = "http://127.0.0.1:48215/callback"  # never listened on: the browser stops before it
SCOPES = ["openid", "profile"]
BURST = 10
BUDGET = 1.1  # the issue's: an action on a cached access token <= 1.1x one on a token


def grant_table(provider: OidcProvider) -> dict[str, object]:
    return {
        "issuer": provider.issuer,
        "client_id": PUBLIC_CLIENT,
        "client_auth": "none",
        "scopes": SCOPES,
        "ca_file": str(provider.ca_file),
        "allow_private_addresses": True,
    }


def policy(provider: OidcProvider) -> str:
    table = "\n".join(
        f"{key} = {json.dumps(value)}" for key, value in grant_table(provider).items()
    )
    # A service is named by a DNS name, never an IP literal; the gateway's executor (the
    # harness's --real-executor) resolves every name to 127.0.0.1, where the provider listens.
    services = ""
    for service, credential in (("with-grant", "grant"), ("with-token", "peer-token")):
        services += f"""
[http.services.{service}]
base_url = "https://{HOST_NAME}:{provider.port}"
credential = "{credential}"
ca_file = "{provider.ca_file}"
allow_private_addresses = true

[http.services.{service}.operations.whoami]
method = "GET"
path = "/api/whoami"
read_only = true
approval = "session"
response_fields = ["state"]
"""
    return f"""
[gateway]
approval_timeout_s = 20
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.grant]
kind = "oauth"
approval = "session"

[credentials.grant.oauth]
{table}

[credentials.peer-token]
kind = "token"
approval = "session"
{services}"""


def connect(provider: OidcProvider, account: str) -> TokenGrant:
    """A grant by the code flow with PKCE, the human's side driven by the harness's browser."""
    spec = OAuthGrantSpec.model_validate(grant_table(provider))
    http = OAuthHttp(spec.ca_file, spec.timeout_s, spec.max_response_bytes, allow_private=True)
    client = OAuthClient(spec, http)
    flow = client.begin_code(CALLBACK)
    with Browser(provider.ca_file, account) as browser:
        final = browser.authorize(flow.url, CALLBACK.rsplit("/", 1)[0])
    return client.exchange_code(flow, parse_qsl(urlsplit(final).query), None)


def make_home(root: Path, provider: OidcProvider) -> Path:
    """A home whose vault holds the grant and the peer's token (test-sized KDF costs)."""
    home = root / "h"
    home.mkdir(mode=0o700)
    grant, peer = connect(provider, "alice"), connect(provider, "bob")
    assert grant.refresh_token is not None and grant.scopes is not None
    store = VaultFile.at(locate(env=clean_env(home)))
    vault = store.create(SecretBytes(PASSPHRASE.encode()), kdf=KdfParams(64, 1, 1))
    vault.add(
        "grant",
        "oauth",
        {"refresh_token": grant.refresh_token, "scopes": " ".join(grant.scopes),
         "issuer": provider.issuer},
    )  # fmt: skip
    vault.add("peer-token", "token", {"token": peer.access_token})
    vault.lock()
    (home / "gateway.toml").write_text(policy(provider))
    return home


def action(request_id: str, service: str) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "http_request",
            "service_id": service, "operation_id": "whoami", "args": {}}  # fmt: skip


def first_with_card(gw: Gateway, agent: AgentProcess, service: str) -> None:
    agent.send(action(f"first-{service}", service))
    try:
        card = wait_card(gw, timeout=30)
    except AssertionError:
        raise AssertionError(f"no card: {agent.next(1)}") from None
    assert decide(gw, card["id"])["ok"]
    reply = agent.next(30)
    assert reply.get("ok") and reply["result"]["status"] == 200, reply


def call(agent: AgentProcess, request_id: str, service: str) -> float:
    started = time.perf_counter()
    reply = agent.call(action(request_id, service), timeout=30)
    elapsed = time.perf_counter() - started
    assert reply.get("ok") and reply["result"]["status"] == 200, reply
    return elapsed


def token_requests(provider: OidcProvider) -> int:
    """Every request the provider's token endpoint answered so far (its event log)."""
    return len(provider.token_requests())


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run(rounds: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-oauth-"))
    report: dict[str, Any] = {"rounds": rounds, "budget": BUDGET, "load_before": os.getloadavg()[0]}
    try:
        with running_oidc_provider() as provider:
            gw = Gateway(make_home(root, provider))
            gw.start("--real-vault", "--real-executor")
            try:
                gw.unlock()
                gw.accept_policy()
                agent = gw.spawn_agent()
                report |= count_refreshes(gw, agent, provider)
                report |= side_by_side(agent, provider, rounds)
                agent.exit()
            finally:
                gw.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report["load_after"] = os.getloadavg()[0]
    return report


def count_refreshes(gw: Gateway, agent: AgentProcess, provider: OidcProvider) -> dict[str, int]:
    # 1. The first action on the grant: no access token is held yet, so one refresh. The token
    #    it gets lives 4 s: due for refresh halfway through, 2 s later.
    provider.set_access_token_ttl(4)
    before = token_requests(provider)
    first_with_card(gw, agent, "with-grant")
    first = token_requests(provider) - before
    first_with_card(gw, agent, "with-token")
    # 2. Once it is due, a burst of actions: one refresh among them; the new token lasts an hour.
    provider.set_access_token_ttl(3600)
    time.sleep(2.5)
    before = token_requests(provider)
    for n in range(BURST):
        call(agent, f"burst-{n}", "with-grant")
    burst = token_requests(provider) - before
    # 3. The provider ends that access token early (the last one it issued): the service
    #    answers 401, the gateway refreshes once and tries the action once more.
    assert provider.drop_access_token(provider.issued("access_token")[-1])
    before = token_requests(provider)
    call(agent, "after-401", "with-grant")
    return {
        "token_requests_first_action": first,
        "burst_actions": BURST,
        "token_requests_burst_after_expiry": burst,
        "token_requests_after_401": token_requests(provider) - before,
    }


def side_by_side(agent: AgentProcess, provider: OidcProvider, rounds: int) -> dict[str, Any]:
    """4. The cached access token vs the token credential, alternating which goes first."""
    for n in range(10):  # warm both paths alike
        call(agent, f"warm-g{n}", "with-grant")
        call(agent, f"warm-t{n}", "with-token")
    before = token_requests(provider)
    ours: list[float] = []
    peer: list[float] = []
    for n in range(rounds):
        order = ("with-grant", "with-token") if n % 2 else ("with-token", "with-grant")
        for service in order:
            sample = call(agent, f"r{n}-{service}", service)
            (ours if service == "with-grant" else peer).append(sample)
    grant_p50, token_p50 = statistics.median(ours) * 1000, statistics.median(peer) * 1000
    return {
        "token_requests_timed_rounds": token_requests(provider) - before,
        "grant_p50_ms": grant_p50,
        "token_p50_ms": token_p50,
        "grant_p99_ms": percentile(ours, 0.99),
        "token_p99_ms": percentile(peer, 0.99),
        "ratio_p50": grant_p50 / token_p50,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="60 rounds")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    report = run(60 if args.quick else args.rounds)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    # The counts are exact on any machine; the ratio is reported against its budget, and a
    # loaded machine may push it over without anything being wrong with the code.
    exact = (
        report["token_requests_first_action"] == 1
        and report["token_requests_burst_after_expiry"] == 1
        and report["token_requests_after_401"] == 1
        and report["token_requests_timed_rounds"] == 0
    )
    return 0 if exact else 1


def print_report(report: dict[str, Any]) -> None:
    print(f"load average before/after: {report['load_before']:.2f} / {report['load_after']:.2f}")
    print(f"first action on the grant: {report['token_requests_first_action']} token request")
    print(
        f"{report['burst_actions']} actions once the access token was due: "
        f"{report['token_requests_burst_after_expiry']} token request"
    )
    print(
        "one action whose access token the provider ended (401, refresh, retry): "
        f"{report['token_requests_after_401']} token request"
    )
    print(
        f"{report['rounds']} actions each, alternating (p50 / p99 ms): "
        f"oauth grant {report['grant_p50_ms']:.2f} / {report['grant_p99_ms']:.2f}, "
        f"token credential {report['token_p50_ms']:.2f} / {report['token_p99_ms']:.2f}"
    )
    print(
        f"ratio (oauth / token, p50): {report['ratio_p50']:.3f}x, budget <= {report['budget']}x; "
        f"token requests during them: {report['token_requests_timed_rounds']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
