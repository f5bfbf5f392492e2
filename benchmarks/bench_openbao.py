"""Credentials from OpenBao beside the local vault's, in one run, through one real gateway.

    python benchmarks/bench_openbao.py [--runs 200] [--json]
    python benchmarks/bench_openbao.py --quick --json     # a short profile

Starts a real OpenBao (dev mode, its own TLS, the gateway's AppRole), the harness's TLS server
and an sshd that trusts OpenBao's SSH CA and an authorized key, and one real gateway process
with its own executor. One requester process holds a session grant for every action, then
reports medians (p50) of:

* HTTPS, the token in the local vault (the peer) and the same call with the token read from
  KV v2 for each call (a token check and a KV read at OpenBao, both over one kept-alive TLS
  connection); the budget is <= 1.5x;
* SSH, a stored key on a pooled connection (the peer) and a certificate per action: a fresh
  Ed25519 key, signed by the SSH engine, a new SSH connection and login for the one command.
  No budget: the second pays a handshake by design (nothing outlives the action); quoted.

Needs root for the sshd's test account. Ratios are ours/peer (lower is better).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.gateway import PASSPHRASE, Gateway, clean_env  # noqa: E402
from harness.real_openbao import KV_FIELD, KV_PATH, SSH_ROLE, OpenBao, running_openbao  # noqa: E402
from harness.real_sshd import Sshd, ensure_user, running_sshd  # noqa: E402
from harness.real_tls import API_HOST, TlsServer, running_tls_server  # noqa: E402
from safeport.shared.wire import recv_message, send_message  # noqa: E402

BUDGET = 1.5
ACTIONS = {
    "https_vault": ("http_request", "api-local", "status"),
    "https_openbao": ("http_request", "api-bao", "status"),
    "ssh_stored_key": ("ssh_exec", "box-key", "true"),
    "ssh_certificate": ("ssh_exec", "box-cert", "true"),
}


def policy_text(bao: OpenBao, tls: TlsServer, sshd: Sshd) -> str:
    services = "".join(
        f"""
[http.services.{name}]
base_url = "{tls.base_url(API_HOST)}"
credential = "{credential}"
ca_file = "{tls.ca_file}"
allow_private_addresses = true

[http.services.{name}.operations.status]
method = "GET"
path = "/v1/staging/services/web/status"
response_fields = ["state"]
read_only = true
"""
        for name, credential in (("api-local", "local-token"), ("api-bao", "bao-token"))
    )
    hosts = "".join(
        f"""
[ssh.hosts.{name}]
address = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
host_keys = ["{sshd.host_key_line}"]
credential = "{credential}"

[ssh.hosts.{name}.commands.true]
argv = ["true"]
read_only = true
"""
        for name, credential in (("box-key", "stored-key"), ("box-cert", "cert-key"))
    )
    return f"""
[gateway]
auto_lock_minutes = 0

[sources.openbao.team]
address = "{bao.address}"
ca_file = "{bao.ca_file}"
auth = {{ method = "approle", role_id = "{bao.role_id}", secret_id_credential = "bao-secret-id" }}

[credentials.bao-secret-id]
kind = "token"

[credentials.local-token]
kind = "token"
approval = "session"

[credentials.bao-token]
kind = "token"
approval = "session"
source = "team"
kv_path = "{KV_PATH}"
kv_field = "{KV_FIELD}"

[credentials.stored-key]
kind = "ssh-key"
approval = "session"

[credentials.cert-key]
kind = "ssh-key"
approval = "session"
source = "team"
ssh_role = "{SSH_ROLE}"
{services}{hosts}"""


def proposal(kind: str, request_id: str) -> dict[str, Any]:
    action, target, operation = ACTIONS[kind]
    if action == "http_request":
        names = {"service_id": target, "operation_id": operation}
    else:
        names = {"host_id": target, "command_id": operation}
    return {"v": 1, "id": request_id, "type": "propose", "action": action, **names, "args": {}}


def client_main(home: Path, runs: int) -> None:
    """The requester: one session card per credential first, then ``runs`` calls of each."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    assert recv_message(sock)["type"] == "welcome"
    for kind in ACTIONS:
        send_message(sock, proposal(kind, f"warm-{kind}"))
        reply = recv_message(sock)
        assert reply["ok"], reply
    # Interleaved, one call of each kind per round: a load that comes and goes on the machine
    # weighs on every kind alike.
    samples: dict[str, list[float]] = {kind: [] for kind in ACTIONS}
    for n in range(runs + 5):
        for kind in ACTIONS:
            started = time.perf_counter()
            send_message(sock, proposal(kind, f"{kind}-{n}"))
            reply = recv_message(sock)
            if n >= 5:
                samples[kind].append(time.perf_counter() - started)
            assert reply["ok"], reply
    print(json.dumps({k: statistics.median(v) * 1000 for k, v in samples.items()}), flush=True)


def measure(runs: int) -> dict[str, float]:
    with running_openbao(ensure_user()) as bao, running_tls_server() as tls:
        ca_line = bao.ssh_ca_public_key
        with running_sshd(trusted_user_ca=ca_line, also_authorized=True) as sshd:
            return through_gateway(bao, tls, sshd, runs)


def through_gateway(bao: OpenBao, tls: TlsServer, sshd: Sshd, runs: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp(prefix="sp-bench-bao-"))
    home.chmod(0o700)
    secret_id = home / "secret-id"
    secret_id.write_text(bao.new_secret_id())
    gw = Gateway(home)
    gw.write_policy(policy_text(bao, tls, sshd))
    gw.start("--real-executor", "--seal", "--ssh-key-file", str(sshd.client_key_path),
             "--vault-token-file", f"bao-secret-id={secret_id}")  # fmt: skip
    try:
        gw.unlock()
        gw.accept_policy()
        client = subprocess.Popen(
            ["flock", "-s", str(home / "client.lock"), sys.executable, __file__,
             "--client", str(home), "--runs", str(runs)],
            cwd=REPO, env=clean_env(home), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        approved = 0
        deadline = time.monotonic() + 120
        while approved < len(ACTIONS) and time.monotonic() < deadline:
            for card in gw.control("approvals.list")["result"]["cards"]:
                gw.control("approvals.decide", id=card["id"], approve=True, passphrase=PASSPHRASE)
                approved += 1
            time.sleep(0.02)
        out, _ = client.communicate(timeout=1200)
        assert client.returncode == 0, out
        return {k: float(v) for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    finally:
        gw.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="30 runs of each")
    parser.add_argument("--client", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client is not None:
        client_main(args.client, args.runs)
        return
    runs = 30 if args.quick else args.runs
    p50 = measure(runs)
    figures = {
        "runs": runs,
        **{f"{kind}_p50_ms": round(value, 3) for kind, value in p50.items()},
        "ratio_https": round(p50["https_openbao"] / p50["https_vault"], 2),
        "ratio_ssh": round(p50["ssh_certificate"] / p50["ssh_stored_key"], 2),
        "budget_https": BUDGET,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    verdict = "ok" if figures["ratio_https"] <= BUDGET else "over budget"
    print(f"HTTPS, token in the local vault, p50:   {p50['https_vault']:.3f} ms")
    print(f"HTTPS, token read from OpenBao KV, p50: {p50['https_openbao']:.3f} ms "
          f"({figures['ratio_https']}x, budget <= {BUDGET}x: {verdict})")  # fmt: skip
    print(f"SSH, stored key (pooled), p50:          {p50['ssh_stored_key']:.3f} ms")
    print(f"SSH, certificate per action, p50:       {p50['ssh_certificate']:.3f} ms "
          f"({figures['ratio_ssh']}x)")  # fmt: skip


if __name__ == "__main__":
    main()
