"""run_readonly_query beside a warm psycopg connection, in one run against one local PostgreSQL.

    python benchmarks/bench_sql.py [--runs 300] [--json]
    python benchmarks/bench_sql.py --quick --json     # the short profile CI runs

Starts Debian's PostgreSQL on 127.0.0.1 with TLS (the test harness's server) and a real gateway
process with its own executor, approves one session card for a requester process, then reports
medians (p50) of the same small declared query (two rows of ``orders``):

* through the gateway: agent.sock, identity re-check, policy, argument validation, session
  grant, two fsynced journal records, the executor, the result filter;
* the executor alone: BEGIN READ ONLY, the transaction's timeouts with the role read again,
  DECLARE and FETCH of a server-side cursor, ROLLBACK (one pipelined round trip), and the
  conversion of the rows;
* the peer: the same statement with the same bound value on a warm psycopg connection over
  the same TLS (``conn.execute(...).fetchall()``, autocommit).

Ratios are ours/peer (lower is better). A journaled action pays two durable records, so the
gateway's budget is <= 2.5x the floor under it: two bare write+fsync pairs in the journals'
folder (measured right before and after the gateway's run) plus the warm query; the executor's
is <= 3x the warm query.
Needs root (or a postgres account) to run the server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psycopg  # noqa: E402

from harness.fakes import CANARY  # noqa: E402
from harness.gateway import PASSPHRASE, Gateway, clean_env  # noqa: E402
from harness.real_postgres import READER, Postgres, running_postgres  # noqa: E402
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor  # noqa: E402
from safeport.action_gateway.executors.prepare import prepare_sql  # noqa: E402
from safeport.shared.schemas.config import parse_gateway_policy  # noqa: E402
from safeport.shared.wire import recv_message, send_message  # noqa: E402
from safeport.vault.secrets import SecretBytes, TokenSecret  # noqa: E402

STATEMENT = "SELECT id, total, note FROM orders WHERE customer = {customer} ORDER BY id"
PEER_STATEMENT = "SELECT id, total, note FROM orders WHERE customer = %(customer)s ORDER BY id"
PROPOSAL = {
    "v": 1,
    "type": "propose",
    "action": "run_readonly_query",
    "database": "app",
    "query": "orders_of",
    "params": {"customer": "alice"},
}
BUDGET = 2.5  # through the gateway, over two bare fsync pairs + the warm query
BUDGET_EXECUTOR = 3.0  # the executor alone, over the warm query


def policy_text(pg: Postgres) -> str:
    return f"""
[gateway]
auto_lock_minutes = 0

[credentials.db-password]
kind = "token"

[sql.databases.app]
host = "127.0.0.1"
port = {pg.port}
database = "app"
user = "{READER}"
credential = "db-password"
ca_pem = \"\"\"{pg.ca_pem}\"\"\"

[sql.databases.app.queries.orders_of]
statement = "{STATEMENT}"
columns = ["id", "total", "note"]
max_rows = 20
approval = "session"
params.customer = {{ pattern = "^[a-z]{{1,20}}$" }}
"""


def client_main(home: Path, runs: int) -> None:
    """The requester: its first proposal waits for the session card, then ``runs`` more."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    assert recv_message(sock)["type"] == "welcome"
    send_message(sock, {**PROPOSAL, "id": "warm"})
    assert recv_message(sock)["ok"]
    samples = []
    for n in range(runs + 10):
        started = time.perf_counter()
        send_message(sock, {**PROPOSAL, "id": f"r{n}"})
        reply = recv_message(sock)
        if n >= 10:  # the first few warm the pool and the journals
            samples.append(time.perf_counter() - started)
        assert reply["ok"] and len(reply["result"]["rows"]) == 2, reply
    print(json.dumps({"p50_ms": statistics.median(samples) * 1000}), flush=True)


def bare_fsync_pairs(folder: Path, rounds: int) -> list[float]:
    """Two appends of a record-sized line, each fsynced, timed together: the floor under an
    action's two durable records (as in bench_gateway.py)."""
    fd = os.open(folder / "bare.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * 700 + b"\n"
    samples = []
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(2):
                os.write(fd, line)
                os.fsync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
    return samples


def through_gateway(pg: Postgres, runs: int) -> tuple[float, float]:
    """The gateway's p50 and, beside it, two bare fsync pairs' p50 in its journals' folder."""
    home = Path(tempfile.mkdtemp(prefix="sp-bench-sql-"))
    home.chmod(0o700)
    gw = Gateway(home)
    gw.write_policy(policy_text(pg))
    gw.start("--real-executor", "--seal")
    try:
        gw.unlock()
        gw.accept_policy()
        client = subprocess.Popen(
            ["flock", "-s", str(home / "client.lock"), sys.executable, __file__,
             "--client", str(home), "--runs", str(runs)],
            cwd=REPO, env=clean_env(home), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            cards = gw.control("approvals.list")["result"]["cards"]
            if cards:
                gw.control("approvals.decide", id=cards[0]["id"], approve=True,
                           passphrase=PASSPHRASE)  # fmt: skip
                break
            time.sleep(0.02)
        bare = bare_fsync_pairs(home / "audit", runs)
        out, _ = client.communicate(timeout=600)
        assert client.returncode == 0, out
        bare += bare_fsync_pairs(home / "audit", runs)
        gateway = float(json.loads(out.strip().splitlines()[-1])["p50_ms"])
        return gateway, statistics.median(bare) * 1000
    finally:
        gw.stop()
        shutil.rmtree(home, ignore_errors=True)


def p50(run: Callable[[], object], count: int, warmup: int = 10) -> float:
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true", help="30 runs of each")
    parser.add_argument("--client", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client is not None:
        client_main(args.client, args.runs)
        return
    if args.quick:
        args.runs = 30
    with running_postgres() as pg:
        parsed, _ = parse_gateway_policy(policy_text(pg))
        database = parsed.sql.databases["app"]
        action = prepare_sql(
            "app", database, "orders_of", database.queries["orders_of"], {"customer": "alice"}
        )
        executor = GatewayExecutor()
        secret = TokenSecret(SecretBytes(CANARY.encode()))
        with tempfile.NamedTemporaryFile("w", suffix=".pem") as ca:
            ca.write(pg.ca_pem)
            ca.flush()
            with psycopg.connect(
                host="127.0.0.1", port=pg.port, dbname="app", user=READER, password=CANARY,
                sslmode="verify-full", sslrootcert=ca.name, autocommit=True,
            ) as conn:  # fmt: skip
                params = {"customer": "alice"}
                peer = p50(lambda: conn.execute(PEER_STATEMENT, params).fetchall(), args.runs)
                alone = p50(lambda: executor.sql_query(action, secret), args.runs)
                gateway, bare = through_gateway(pg, args.runs)
                peer_after = p50(lambda: conn.execute(PEER_STATEMENT, params).fetchall(), args.runs)
        executor.close_all()
    peer_ms = statistics.mean([peer, peer_after])  # the peer before and after the others
    floor = bare + peer_ms
    figures = {
        "runs": args.runs,
        "psycopg_warm_p50_ms": round(peer_ms, 3),
        "bare_two_fsyncs_p50_ms": round(bare, 3),
        "executor_p50_ms": round(alone, 3),
        "gateway_p50_ms": round(gateway, 3),
        "ratio_executor": round(alone / peer_ms, 2),
        "ratio_gateway": round(gateway / peer_ms, 2),
        "ratio_gateway_to_floor": round(gateway / floor, 2),
        "budget_gateway": BUDGET,
        "budget_executor": BUDGET_EXECUTOR,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"warm psycopg, p50:            {peer_ms:.3f} ms")
    print(f"two bare fsync pairs, p50:    {bare:.3f} ms  (the journals' folder)")
    verdict = "ok" if alone / peer_ms <= BUDGET_EXECUTOR else "over budget"
    print(f"executor alone, p50:          {alone:.3f} ms  ({figures['ratio_executor']}x the query, "
          f"budget <= {BUDGET_EXECUTOR}x: {verdict})")  # fmt: skip
    verdict = "ok" if gateway / floor <= BUDGET else "over budget"
    print(f"through the gateway, p50:     {gateway:.3f} ms  ({figures['ratio_gateway']}x the "
          f"query; {figures['ratio_gateway_to_floor']}x two fsync pairs + the query, "
          f"budget <= {BUDGET}x: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
