"""A role given CREATE after the policy was accepted (on a schema, on the database, through a
role it belongs to, or as a schema's owner) is refused like one given a table to write, on a
pooled connection and on a new one; TEMPORARY, which PUBLIC holds by default, is not counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_postgres import Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from tests.action_gateway.executors.sql_policy import action, password, policy

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration

ROLE = "creator"


@pytest.fixture
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor()
    yield executor
    executor.close_all()


@pytest.fixture
def creator(postgres: Postgres) -> Iterator[Postgres]:
    postgres.role(ROLE, CANARY)
    yield postgres
    with postgres.admin() as admin:
        admin.execute("DROP SCHEMA IF EXISTS sp_scratch CASCADE")
        for role in (ROLE, "sp_builders"):
            if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                admin.execute(f"DROP OWNED BY {role}")  # its grants too (on orders, public)
                admin.execute(f"DROP ROLE {role}")


def _refused(executor: GatewayExecutor, query: object) -> ActionError:
    with pytest.raises(ActionError) as caught:
        executor.sql_query(query, password())  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("grants", "named"),
    [
        ([f"GRANT CREATE ON SCHEMA public TO {ROLE}"], "schema public"),
        (
            ["CREATE SCHEMA sp_scratch", f"GRANT USAGE, CREATE ON SCHEMA sp_scratch TO {ROLE}"],
            "schema sp_scratch",
        ),
        ([f"GRANT CREATE ON DATABASE app TO {ROLE}"], "database app"),
        (  # through a role it belongs to, even one it does not inherit from
            [
                "CREATE ROLE sp_builders NOLOGIN",
                "GRANT CREATE ON SCHEMA public TO sp_builders",
                f"GRANT sp_builders TO {ROLE}",
                f"ALTER ROLE {ROLE} NOINHERIT",
            ],
            "schema public",
        ),
        # An owner may grant itself CREATE at any time.
        ([f"CREATE SCHEMA sp_scratch AUTHORIZATION {ROLE}"], "schema sp_scratch"),
    ],
    ids=["public", "own-schema", "database", "through-a-group", "owner"],
)
def test_create_given_after_accept_is_refused_on_the_pooled_and_a_new_connection(
    creator: Postgres, executor: GatewayExecutor, grants: list[str], named: str
) -> None:
    parsed = policy(creator, user=ROLE)
    assert executor.inspect_roles(parsed, lambda name: password()) == ([], [])
    query = action(parsed, "order_count", min_id=0)
    assert executor.sql_query(query, password()).rows == [[4]]  # pooled now
    with creator.admin() as admin:
        for grant in grants:
            admin.execute(grant)
    try:
        pooled = _refused(executor, query)  # asked again inside the query's transaction
        assert pooled.failure == "role_refused" and named in pooled.message
        assert executor.pooled_sql_connections == 0
        fresh = _refused(executor, query)  # and when a new connection is inspected
        assert fresh.failure == "role_refused" and named in fresh.message
        problems, _ = executor.inspect_roles(parsed, lambda name: password())
        assert problems and f"may create objects in {named}" in problems[0]
    finally:
        with creator.admin() as admin:
            admin.execute(f"ALTER ROLE {ROLE} INHERIT")


def test_temporary_alone_still_runs_and_create_said_in_words_is_allowed(
    creator: Postgres, executor: GatewayExecutor
) -> None:
    with creator.admin() as admin:
        admin.execute(f"GRANT TEMPORARY ON DATABASE app TO {ROLE}")
    parsed = policy(creator, user=ROLE)
    assert executor.inspect_roles(parsed, lambda name: password()) == ([], [])
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]
    with creator.admin() as admin:
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {ROLE}")
    allowed = policy(creator, user=ROLE, extra='allow_write_privileges = "builds reports"')
    assert executor.sql_query(action(allowed, "order_count", min_id=0), password()).rows == [[4]]
