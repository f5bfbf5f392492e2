"""Executors side by side with their peers, in one run against local servers.

    python benchmarks/bench_executors.py [--ssh-runs 200] [--cold-runs 15] [--http-runs 300]

Starts a real OpenSSH sshd and a TLS server on 127.0.0.1 (the same ones the tests use), then
reports medians (p50) of:
  * a pooled `ssh_exec` of `true` vs `ssh -o BatchMode=yes … true` cold (goal <= 0.05x) and vs
    `ssh` reusing a ControlMaster connection (goal <= 0.5x);
  * one HTTPS operation through the executor (build + validate + resolve hook + pinned address
    + field filter + echo check) vs a bare warm `httpx.Client` GET of the same endpoint
    (goal <= 1.5x).
Ratios are ours/peer for latencies (lower is better). Needs root for the sshd test user.
"""

from __future__ import annotations

import argparse
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the harness: real servers

from harness.real_sshd import Sshd, running_sshd
from harness.real_tls import API_HOST, running_tls_server
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.prepare import prepare_http, prepare_ssh
from safeport.shared.schemas.config import (
    HttpOperation,
    HttpService,
    SshCommand,
    SshHost,
)
from safeport.shared.schemas.config_params import ParamSpec
from safeport.vault.secrets import SecretBytes, TokenSecret


def p50(run: Callable[[], object], count: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def ssh_argv(sshd: Sshd, *extra: str) -> list[str]:
    return [
        "ssh",
        "-F", "/dev/null",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={sshd.known_hosts}",
        "-o", "IdentitiesOnly=yes",
        "-i", str(sshd.client_key_path),
        "-p", str(sshd.port),
        *extra,
        f"{sshd.user}@127.0.0.1",
        "true",
    ]  # fmt: skip


def bench_ssh(sshd: Sshd, ssh_runs: int, cold_runs: int) -> None:
    host = SshHost(
        address="127.0.0.1",
        port=sshd.port,
        user=sshd.user,
        host_keys=[sshd.host_key_line],
        credential="bench-key",
    )
    command = SshCommand(argv=["true"])
    action = prepare_ssh("bench", host, "true", command, {})
    executor = GatewayExecutor()
    secret = sshd.secret()

    def run(argv: list[str]) -> None:
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True)

    cold = p50(lambda: run(ssh_argv(sshd)), cold_runs, warmup=1)
    control = Path(tempfile.mkdtemp(prefix="sp-cm-")) / "cm"
    master = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}", "-o", "ControlPersist=60"]
    # Alternate blocks so background load hits both sides alike.
    ours_blocks, muxed_blocks = [], []
    try:
        for _ in range(3):
            ours_blocks.append(p50(lambda: executor.ssh_exec(action, secret), ssh_runs // 3))
            muxed_blocks.append(p50(lambda: run(ssh_argv(sshd, *master)), cold_runs))
    finally:
        executor.close_all()
        subprocess.run(
            ["ssh", "-o", f"ControlPath={control}", "-O", "exit", "127.0.0.1"],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(control.parent, ignore_errors=True)
    ours, muxed = statistics.median(ours_blocks), statistics.median(muxed_blocks)
    print(f"ssh_exec pooled (safeport)        p50 {ours:8.2f} ms  ({ssh_runs} runs)")
    print(f"ssh -o BatchMode=yes cold         p50 {cold:8.2f} ms  ({cold_runs} runs)")
    print(f"ssh with ControlMaster (reused)   p50 {muxed:8.2f} ms  ({cold_runs * 3} runs)")
    print(f"  ratio vs cold ssh:       {ours / cold:6.3f}x  (goal <= 0.05x)")
    print(f"  ratio vs ControlMaster:  {ours / muxed:6.3f}x  (goal <= 0.5x)")


def bench_https(http_runs: int) -> None:
    with running_tls_server() as tls:
        operation = HttpOperation(
            method="GET",
            path="/v1/{environment}/services/{service}/status",
            response_fields=["environment", "service", "state", "revision"],
            params={
                "environment": ParamSpec(enum=["staging"]),
                "service": ParamSpec(pattern="^[a-z-]{1,48}$"),
            },
        )
        service = HttpService(
            base_url=tls.base_url(),
            credential="bench-token",
            ca_file=str(tls.ca_file),
            allow_private_addresses=True,
        )
        action = prepare_http(
            "bench", service, "status", operation, {"environment": "staging", "service": "worker"}
        )
        executor = GatewayExecutor(resolver=lambda host, port: ["127.0.0.1"])
        secret = TokenSecret(SecretBytes(b"bench-token-value"))
        context = ssl.create_default_context(cafile=str(tls.ca_file))
        bare = httpx.Client(verify=context, trust_env=False)
        url = f"https://127.0.0.1:{tls.port}/v1/staging/services/worker/status"
        headers = {"Host": f"{API_HOST}:{tls.port}", "Authorization": "Bearer bench-token-value"}

        def bare_get() -> object:
            response = bare.get(url, headers=headers, extensions={"sni_hostname": API_HOST})
            response.raise_for_status()
            return response.json()["state"]

        # Alternate blocks so background load hits both sides alike.
        ours_blocks, bare_blocks = [], []
        for _ in range(3):
            ours_blocks.append(p50(lambda: executor.http_request(action, secret), http_runs // 3))
            bare_blocks.append(p50(bare_get, http_runs // 3))
        ours, peer = statistics.median(ours_blocks), statistics.median(bare_blocks)
        executor.close_all()
        bare.close()
    print(f"https operation (safeport)        p50 {ours:8.3f} ms  ({http_runs} runs)")
    print(f"bare warm httpx.Client GET        p50 {peer:8.3f} ms  ({http_runs} runs)")
    print(f"  ratio vs bare httpx:     {ours / peer:6.3f}x  (goal <= 1.5x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ssh-runs", type=int, default=200)
    parser.add_argument("--cold-runs", type=int, default=15)
    parser.add_argument("--http-runs", type=int, default=300)
    args = parser.parse_args()
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        sys.exit("sshd is not installed (apt install openssh-server)")
    with running_sshd() as sshd:
        bench_ssh(sshd, args.ssh_runs, args.cold_runs)
    bench_https(args.http_runs)


if __name__ == "__main__":
    main()
