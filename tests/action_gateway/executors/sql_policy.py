"""gateway.toml text for the SQL tests: one database on the harness's PostgreSQL, its queries."""

from __future__ import annotations

from harness.fakes import CANARY
from harness.real_postgres import READER, Postgres
from safeport.action_gateway.executors.interface import SqlAction
from safeport.action_gateway.executors.prepare import prepare_sql
from safeport.shared.schemas.config import GatewayPolicy, SqlQuery, parse_gateway_policy
from safeport.vault.secrets import SecretBytes, TokenSecret

QUERIES = """
[sql.databases.app.queries.orders_of]
statement = \"\"\"
SELECT id, customer, total, note, created
FROM orders
WHERE customer = {customer}  -- bound by the driver, never spliced
ORDER BY id
\"\"\"
description = "A customer's orders"
columns = ["id", "total", "note", "created"]
approval = "session"
params.customer = { pattern = "^.{1,80}$" }

[sql.databases.app.queries.order_count]
statement = "SELECT count(*) AS n FROM orders WHERE id >= {min_id}"
columns = ["n"]
params.min_id = { type = "int", min = 0, max = 1000000 }

[sql.databases.app.queries.series]
statement = "SELECT g AS n, repeat('x', 100) AS pad FROM generate_series(1, 10000000) g"
columns = ["n", "pad"]
max_rows = 50
max_bytes = 2000
"""


def policy_text(
    pg: Postgres,
    *,
    user: str = READER,
    credential: str = "db-password",
    kind: str = "token",
    ca_pem: str | None = None,
    extra: str = "",
    queries: str = QUERIES,
) -> str:
    return f"""
[gateway]
approval_timeout_s = 10
auto_lock_minutes = 0

[credentials.{credential}]
kind = "{kind}"

[sql.databases.app]
host = "127.0.0.1"
port = {pg.port}
database = "app"
user = "{user}"
credential = "{credential}"
connect_timeout_s = 5
ca_pem = \"\"\"{ca_pem or pg.ca_pem}\"\"\"
{extra}
{queries}
"""


def policy(pg: Postgres, **kwargs: str) -> GatewayPolicy:
    parsed, _ = parse_gateway_policy(policy_text(pg, **kwargs))
    return parsed


def password(value: str = CANARY) -> TokenSecret:
    return TokenSecret(token=SecretBytes(value.encode()))


def action(parsed: GatewayPolicy, query_id: str, **args: str | int) -> SqlAction:
    database = parsed.sql.databases["app"]
    return prepare_sql("app", database, query_id, database.queries[query_id], args)


def unchecked(
    parsed: GatewayPolicy,
    statement: str,
    *,
    columns: tuple[str, ...] = ("v",),
    max_rows: int = 100,
    max_bytes: int = 65536,
    timeout_s: float = 5.0,
) -> SqlAction:
    """A query the policy check would refuse, built past it, to show what the database itself
    does with it (the guard that holds when a check is wrong)."""
    database = parsed.sql.databases["app"]
    query = SqlQuery.model_construct(
        statement=statement,
        description="",
        columns=list(columns),
        max_rows=max_rows,
        max_bytes=max_bytes,
        timeout_s=timeout_s,
        approval=None,
        params={},
    )
    return SqlAction("app", database, "unchecked", query, ())
