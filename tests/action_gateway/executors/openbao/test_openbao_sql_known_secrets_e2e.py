"""A password OpenBao issued for one query, read back by that query, through a real gateway.

OpenBao's database role is set up here to also copy each issued password into a table the
issued role may read (an operator's audit trigger, say). A declared query returning the
role's own password as ``bytea`` is withheld whole; one that makes PostgreSQL quote it in a
cast error, the cut aimed inside it, answers ``upstream`` with none of it in the reply, the
journals or the log. The password is the per-action one: the gateway never saw it before the
lease, and the filter knows it only because it is the credential the action ran with.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.gateway import Gateway, decide, wait_card
from harness.real_openbao import DATABASE_ROLE, OpenBao, enable_database_engine
from harness.real_postgres import Postgres
from tests.action_gateway.executors.openbao.test_openbao_kv_e2e import everything_written
from tests.action_gateway.executors.openbao.test_openbao_sql_e2e import db_policy, query, start

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.openbao"

pytestmark = pytest.mark.integration

KEEP = 12
PAD = 299 - len('invalid input syntax for type integer: "') - KEEP
AS_NUMBER = (
    f"SELECT (repeat('a', {PAD}) || value)::int AS v FROM sp_issued WHERE name = current_user"
)
QUERIES = f"""
[sql.databases.app.queries.own_password_bytes]
statement = "SELECT convert_to(value, 'UTF8') AS v FROM sp_issued WHERE name = current_user"
columns = ["v"]

[sql.databases.app.queries.own_password_as_number]
statement = "{AS_NUMBER}"
columns = ["v"]
"""


@pytest.fixture
def copying_engine(openbao: OpenBao, postgres: Postgres) -> Iterator[OpenBao]:
    enable_database_engine(openbao, postgres)
    with postgres.admin() as admin:
        admin.execute("CREATE TABLE IF NOT EXISTS sp_issued (name text, value text)")
    openbao.root().write_data(
        f"database/roles/{DATABASE_ROLE}",
        data={
            "db_name": "app",
            "creation_statements": [
                "CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}' "
                "VALID UNTIL '{{expiration}}';",
                'GRANT USAGE ON SCHEMA public TO "{{name}}";',
                'GRANT SELECT ON orders, sp_issued TO "{{name}}";',
                "INSERT INTO sp_issued VALUES ('{{name}}', '{{password}}');",
            ],
            "revocation_statements": [
                'REVOKE ALL ON orders, sp_issued FROM "{{name}}";',
                'REVOKE USAGE ON SCHEMA public FROM "{{name}}";',
                'DROP ROLE IF EXISTS "{{name}}";',
            ],
            "default_ttl": "60s",
            "max_ttl": "120s",
        },
    )
    try:
        yield openbao
    finally:
        enable_database_engine(openbao, postgres)  # the role as every other test expects it


@pytest.fixture
def gateway(tmp_path: Path, copying_engine: OpenBao, postgres: Postgres) -> Iterator[Gateway]:
    secret_id = tmp_path / "secret-id"
    secret_id.write_text(copying_engine.new_secret_id())
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    gw = start(home, db_policy(copying_engine, postgres) + QUERIES, secret_id)
    try:
        yield gw
    finally:
        assert gw.stop() == 0, gw.stderr_path.read_text()


def _run(gateway: Gateway, name: str) -> dict[str, Any]:
    agent = gateway.spawn_agent()
    agent.send(query("q1", name))
    assert decide(gateway, wait_card(gateway)["id"])["ok"]
    reply: dict[str, Any] = agent.next(30)
    agent.exit()
    return reply


def _issued_password(postgres: Postgres, gateway: Gateway) -> str:
    [issued] = [r["body"] for r in gateway.journal("actions") if r["kind"] == "credential.issued"]
    with postgres.admin() as admin:
        row = admin.execute(
            "SELECT value FROM sp_issued WHERE name = %s", (issued["role"],)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_the_issued_password_returned_as_bytea_is_withheld(
    gateway: Gateway, postgres: Postgres
) -> None:
    reply = _run(gateway, "own_password_bytes")
    assert reply["error"]["code"] == "upstream" and "withheld" in reply["error"]["reason"]
    password = _issued_password(postgres, gateway)
    assert len(password) >= 16
    assert password[:8] not in str(reply) and password[:8] not in everything_written(gateway)


def test_the_issued_password_quoted_in_a_cast_error_leaves_no_piece_at_the_cut(
    gateway: Gateway, postgres: Postgres
) -> None:
    reply = _run(gateway, "own_password_as_number")
    reason = reply["error"]["reason"]
    assert reply["error"]["code"] == "upstream"
    assert re.search(r"integer: \"a{100,}", reason), reason
    password = _issued_password(postgres, gateway)
    assert password[:4] not in reason.removeprefix("sql database 'app': ")
    assert password[:8] not in everything_written(gateway)
