"""A database role that lasts one query: issued by OpenBao's database engine, revoked after.

A real gateway runs run_readonly_query on the real PostgreSQL with a login role OpenBao creates
for that query alone; the lease is revoked right after and the role is gone from the server.
Every lease id, TTL and revocation is journaled, never the password. Beside it, the attacks: a
copy of a role's password used after its lease was revoked, the gateway killed between
the issue and the revocation (the next start revokes it; a revocation that fails is an alarm
in the status), and another service's lease written into the pending-leases file.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hvac.exceptions
import psycopg
import pytest

from harness.gateway import Gateway, clean_env, decide, wait_card, wait_until
from harness.real_openbao import DATABASE_ROLE, OpenBao, enable_database_engine
from harness.real_postgres import Postgres
from tests.action_gateway.executors.openbao.test_openbao_kv_e2e import everything_written

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.openbao"

pytestmark = pytest.mark.integration


def db_policy(bao: OpenBao, pg: Postgres, *, address: str | None = None) -> str:
    return f"""
[gateway]
approval_timeout_s = 10
auto_lock_minutes = 0

[sources.openbao.team]
address = "{address or bao.address}"
ca_file = "{bao.ca_file}"
auth = {{ method = "approle", role_id = "{bao.role_id}", secret_id_credential = "bao-secret-id" }}

[credentials.bao-secret-id]
kind = "token"

[credentials.db-role]
kind = "basic"
source = "team"
database_role = "{DATABASE_ROLE}"

[sql.databases.app]
host = "127.0.0.1"
port = {pg.port}
database = "app"
user = "{DATABASE_ROLE}"
credential = "db-role"
connect_timeout_s = 5
ca_pem = \"\"\"{pg.ca_pem}\"\"\"

[sql.databases.app.queries.order_count]
statement = "SELECT count(*) AS n FROM orders WHERE id >= {{min_id}}"
columns = ["n"]
params.min_id = {{ type = "int", min = 0, max = 1000000 }}

[sql.databases.app.queries.slow_count]
statement = "SELECT count(*) AS n FROM generate_series(1, 300000000) g"
columns = ["n"]
timeout_s = 60
"""


@pytest.fixture
def engine(openbao: OpenBao, postgres: Postgres) -> OpenBao:
    enable_database_engine(openbao, postgres)
    return openbao


def start(home: Path, policy: str, secret_id: Path, *, accepted: bool = False) -> Gateway:
    gw = Gateway(home)
    extra = ["--real-executor", "--vault-token-file", f"bao-secret-id={secret_id}"]
    if accepted:
        extra += ["--accepted-policy-file", str(home / "gateway.toml")]
    gw.write_policy(policy)
    gw.start(*extra)
    gw.unlock()
    if not accepted:
        gw.accept_policy()
    return gw


@pytest.fixture
def secret_id(tmp_path: Path, engine: OpenBao) -> Path:
    path = tmp_path / "secret-id"
    path.write_text(engine.new_secret_id())
    return path


@pytest.fixture
def gateway(
    tmp_path: Path, engine: OpenBao, postgres: Postgres, secret_id: Path
) -> Iterator[Gateway]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = start(home, db_policy(engine, postgres), secret_id)
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def query(request_id: str, name: str, **params: int) -> dict[str, Any]:
    return {"v": 1, "id": request_id, "type": "propose", "action": "run_readonly_query",
            "database": "app", "query": name, "params": params}  # fmt: skip


def role_exists(pg: Postgres, name: str) -> bool:
    with pg.admin() as conn:
        return (
            conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone()
            is not None
        )


def records(gw: Gateway, kind: str) -> list[dict[str, Any]]:
    return [r["body"] for r in gw.journal("actions") if r["kind"] == kind]


def test_each_query_runs_as_a_role_issued_for_it_and_revoked_right_after(
    gateway: Gateway, postgres: Postgres
) -> None:
    agent = gateway.spawn_agent()
    agent.send(query("q1", "order_count", min_id=0))
    card = wait_card(gateway)
    assert dict(card["fields"])["credential from"] == (
        f"OpenBao team: a role issued by database/creds/{DATABASE_ROLE} for this query, "
        "its lease revoked right after"
    )
    assert decide(gateway, card["id"])["ok"]
    reply = agent.next(30)
    agent.exit()
    assert reply["ok"] and reply["result"]["columns"] == ["n"], reply
    [issued] = records(gateway, "credential.issued")
    [revoked] = records(gateway, "credential.revoked")
    assert issued["lease_id"].startswith(f"database/creds/{DATABASE_ROLE}/")
    assert revoked["lease_id"] == issued["lease_id"] and revoked["after_restart"] is False
    assert issued["lease_ttl_s"] == 60
    # The role existed for the query only: OpenBao dropped it when the lease was revoked.
    assert not role_exists(postgres, issued["role"])
    assert json.loads((gateway.home / "leases.json").read_text()) == []
    assert "password" not in json.dumps(issued)


def test_a_copy_of_a_roles_password_is_useless_once_its_lease_is_revoked(
    engine: OpenBao, postgres: Postgres
) -> None:
    leased: Any = engine.root().read(f"database/creds/{DATABASE_ROLE}")
    user, password = leased["data"]["username"], leased["data"]["password"]
    ca = engine.workdir / "pg-ca.pem"
    dsn = (
        f"host=127.0.0.1 port={postgres.port} dbname=app user={user} password={password} "
        f"sslmode=verify-full sslrootcert={ca}"
    )
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM orders").fetchone() is not None
    engine.root().write_data("sys/leases/revoke", data={"lease_id": leased["lease_id"]})
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn).close()


def test_a_lease_left_by_a_killed_gateway_is_revoked_at_the_next_start(
    tmp_path: Path, engine: OpenBao, postgres: Postgres, secret_id: Path
) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = start(home, db_policy(engine, postgres), secret_id)
    agent = gw.spawn_agent()
    agent.send(query("k1", "slow_count"))
    assert decide(gw, wait_card(gw)["id"])["ok"]
    wait_until(lambda: bool(records(gw, "credential.issued")), timeout=10)
    [issued] = records(gw, "credential.issued")
    assert gw.proc is not None
    gw.proc.kill()  # between the issue and the revocation
    gw.proc.wait(10)
    agent.exit()
    pending = json.loads((home / "leases.json").read_text())
    assert [item["lease_id"] for item in pending] == [issued["lease_id"]]
    again = start(home, db_policy(engine, postgres), secret_id, accepted=True)
    try:
        wait_until(lambda: bool(records(again, "credential.revoked")), timeout=15)
        [revoked] = records(again, "credential.revoked")
        assert revoked["lease_id"] == issued["lease_id"] and revoked["after_restart"] is True
        assert json.loads((home / "leases.json").read_text()) == []
        assert not role_exists(postgres, issued["role"])
        assert again.control("status")["result"]["alarms"] == []
    finally:
        assert again.stop() == 0


def test_a_revocation_that_fails_at_the_next_start_is_an_alarm_in_the_status(
    tmp_path: Path, engine: OpenBao, postgres: Postgres, secret_id: Path
) -> None:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    leased: Any = engine.root().read(f"database/creds/{DATABASE_ROLE}")
    (home / "leases.json").write_text(
        json.dumps([{"source": "team", "lease_id": leased["lease_id"], "at": time.time()}])
    )
    # The server moved: the lease cannot be revoked from here now.
    gw = start(home, db_policy(engine, postgres, address="https://127.0.0.1:9"), secret_id,
               accepted=True)  # fmt: skip
    try:
        wait_until(lambda: bool(records(gw, "credential.revoke_failed")), timeout=15)
        [failed] = records(gw, "credential.revoke_failed")
        assert failed["lease_id"] == leased["lease_id"] and "unreachable" in failed["reason"]
        alarms = gw.control("status")["result"]["alarms"]
        assert [a["kind"] for a in alarms] == ["credential.revoke_failed"]
        assert alarms[0]["lease_id"] == leased["lease_id"]
        shown = subprocess.run(
            [sys.executable, "-c", "from safeport.cli import main; main()", "status"],
            env=clean_env(home), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert f"ALARM credential.revoke_failed: lease {leased['lease_id']}" in shown.stdout
        # Kept for the next start: nothing is forgotten until it is revoked.
        pending = json.loads((home / "leases.json").read_text())
        assert [item["lease_id"] for item in pending] == [leased["lease_id"]]
        assert leased["data"]["password"] not in everything_written(gw)
    finally:
        assert gw.stop() == 0
        engine.root().write_data("sys/leases/revoke", data={"lease_id": leased["lease_id"]})


# The file is the gateway's own, but whoever runs as the gateway's account (an agent, in
# shared-user mode) can write it; the next start revokes what it lists with a token that may
# revoke any lease.
LOGINS = "sys/leases/lookup/auth/approle/login/"


def login_leases(bao: OpenBao) -> set[str]:
    listed: Any = bao.root().list(LOGINS)
    return {str(key) for key in ((listed or {}).get("data") or {}).get("keys", [])}


def test_a_lease_of_another_service_written_into_the_file_is_not_revoked(
    tmp_path: Path, engine: OpenBao, postgres: Postgres, secret_id: Path
) -> None:
    # Another service logs in with its own AppRole secret id: its token has a lease the
    # gateway's `sys/leases/revoke` grant could end.
    before = login_leases(engine)
    other = engine.root()
    other.token = ""
    other.auth.approle.login(role_id=engine.role_id, secret_id=engine.new_secret_id())
    [lease] = login_leases(engine) - before
    foreign = f"auth/approle/login/{lease}"
    # The gateway's own lease, left by a crash: this one it revokes.
    own: Any = engine.root().read(f"database/creds/{DATABASE_ROLE}")
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "leases.json").write_text(json.dumps([
        {"source": "team", "lease_id": foreign, "at": time.time()},
        {"source": "team", "lease_id": own["lease_id"], "at": time.time()},
    ]))  # fmt: skip
    gw = start(home, db_policy(engine, postgres), secret_id, accepted=True)
    try:
        wait_until(lambda: bool(records(gw, "credential.revoked")), timeout=15)
        wait_until(lambda: bool(records(gw, "credential.revoke_failed")), timeout=15)
        assert [r["lease_id"] for r in records(gw, "credential.revoked")] == [own["lease_id"]]
        [refused] = records(gw, "credential.revoke_failed")
        assert refused["lease_id"] == foreign and "no lease" in refused["reason"]
        assert [a["kind"] for a in gw.control("status")["result"]["alarms"]] == [
            "credential.revoke_failed"
        ]
        assert other.auth.token.lookup_self()["data"]["display_name"] == "approle"
        with pytest.raises(hvac.exceptions.InvalidRequest):
            engine.root().write_data("sys/leases/lookup", data={"lease_id": own["lease_id"]})
    finally:
        assert gw.stop() == 0
        with contextlib.suppress(hvac.exceptions.Forbidden):  # already ended when this failed
            other.auth.token.revoke_self()


def test_a_role_whose_lease_outlives_ttl_s_is_revoked_unused(
    tmp_path: Path, engine: OpenBao, postgres: Postgres, secret_id: Path
) -> None:
    # The database role's default_ttl, not the policy's ttl_s, decides how long the lease
    # lives: a crash before the revocation would leave the login role for that long.
    enable_database_engine(engine, postgres, ttl="120s")
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = start(home, db_policy(engine, postgres), secret_id)
    try:
        agent = gw.spawn_agent()
        agent.send(query("t1", "order_count", min_id=0))
        assert decide(gw, wait_card(gw)["id"])["ok"]
        reply = agent.next(30)
        agent.exit()
        assert not reply["ok"] and "ttl_s" in reply["error"]["reason"], reply
        [issued] = records(gw, "credential.issued")
        [revoked] = records(gw, "credential.revoked")
        assert issued["lease_ttl_s"] == 120 and revoked["lease_id"] == issued["lease_id"]
        assert not role_exists(postgres, issued["role"])
    finally:
        assert gw.stop() == 0
        enable_database_engine(engine, postgres)  # the legitimate shape: 60 s, as ttl_s
