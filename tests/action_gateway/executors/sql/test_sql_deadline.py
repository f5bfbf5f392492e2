"""A query's deadline holds from the gateway's side against a real PostgreSQL that does not
cooperate: a function that catches the cancel, or that also turns off the server's check for a
lost client. The answer comes within ``timeout_s`` + 2 s, nothing of it still runs on the server
afterwards, and the pool's next query works."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_postgres import READER, Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError, SqlAction
from safeport.vault.secrets import BasicSecret, SecretBytes
from tests.action_gateway.executors.sql_policy import action, password, policy, unchecked

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration

TIMEOUT_S = 1.0
CONTRACT_S = TIMEOUT_S + 2.0  # the answer's bound, whatever the server does

# Set up as the superuser (a reader role cannot create functions): each loops forever, catching
# the cancel; the second also turns off the server's own check for a lost client, so only a
# terminate from a second connection stops it.
_FUNCTIONS = {
    "sp_stubborn": "",
    "sp_stubborn_deaf": "PERFORM set_config('client_connection_check_interval', '0', false);",
    # Busy on the CPU rather than asleep, catching the cancel the same way.
    "sp_stubborn_busy": "",
}
_BODY = {
    "sp_stubborn_busy": "PERFORM count(*) FROM generate_series(1, 200000);",
}


@pytest.fixture(scope="module")
def stubborn(_postgres_session: Postgres | None) -> None:
    if _postgres_session is None:
        return
    with _postgres_session.admin() as admin:
        admin.execute(
            "CREATE OR REPLACE FUNCTION sp_catches_once() RETURNS int LANGUAGE plpgsql AS $$"
            " BEGIN BEGIN PERFORM pg_sleep(30); EXCEPTION WHEN query_canceled THEN"
            " PERFORM pg_sleep(30); END; RETURN 1; END $$"
        )
        admin.execute(f"GRANT EXECUTE ON FUNCTION sp_catches_once() TO {READER}")
        for name, prelude in _FUNCTIONS.items():
            step = _BODY.get(name, "PERFORM pg_sleep(0.1);")
            admin.execute(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS int LANGUAGE plpgsql AS $$"
                f" BEGIN {prelude} LOOP BEGIN {step}"
                " EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$"
            )
            admin.execute(f"GRANT EXECUTE ON FUNCTION {name}() TO {READER}")


@pytest.fixture
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor()
    yield executor
    executor.close_all()


def _timed_out(executor: GatewayExecutor, query: SqlAction) -> tuple[ActionError, float]:
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.sql_query(query, password())
    elapsed = time.monotonic() - started
    assert caught.value.failure == "timeout", caught.value.message
    assert CANARY not in str(caught.value)
    return caught.value, elapsed


def _running(postgres: Postgres, text: str) -> int:
    # A declared statement runs as its cursor is fetched: pg_stat_activity shows the FETCH, not
    # the text declared, for as long as the statement runs.
    with postgres.admin() as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND state <> 'idle'"
            " AND (query LIKE %s OR query LIKE 'FETCH FORWARD %% FROM safeport_query')"
            " AND pid <> pg_backend_pid()",
            (READER, f"%{text}%"),
        ).fetchone()
    assert row is not None and isinstance(row[0], int)
    return row[0]


def _gone(postgres: Postgres, text: str, within_s: float = 10.0) -> bool:
    """Whether no backend of the reader runs ``text`` any more, polled for a bounded time."""
    end = time.monotonic() + within_s
    while _running(postgres, text):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def _next_query_works(executor: GatewayExecutor, postgres: Postgres) -> None:
    fresh = executor.sql_query(action(policy(postgres), "order_count", min_id=0), password())
    assert fresh.rows == [[4]]


@pytest.mark.parametrize(
    ("function", "steps"),
    [
        ("sp_stubborn", {"close", "terminate"}),
        # Busy on the CPU, the loop checks for the cancel outside its handler too (between
        # iterations), where the cancel stops it: what it must be is stopped in time.
        ("sp_stubborn_busy", {"cancel", "close", "terminate"}),
        # With the check for a lost client off, closing alone would leave it running.
        ("sp_stubborn_deaf", {"terminate"}),
    ],
)
def test_a_function_that_catches_the_cancel_is_stopped_by_the_gateway_in_time(
    postgres: Postgres, executor: GatewayExecutor, stubborn: None, function: str, steps: set[str]
) -> None:
    parsed = policy(postgres)
    _next_query_works(executor, postgres)  # a pooled connection runs the stubborn call
    assert executor.pooled_sql_connections == 1
    query = unchecked(parsed, f"SELECT {function}() AS v", timeout_s=TIMEOUT_S)
    error, elapsed = _timed_out(executor, query)
    assert elapsed <= CONTRACT_S, elapsed
    assert error.stopped_by in steps
    assert _gone(postgres, function), f"{function} still runs on the server"
    assert executor.pooled_sql_connections == 0  # the closed connection was not pooled
    _next_query_works(executor, postgres)


def test_a_function_that_outlives_the_server_timeout_but_not_a_cancel_is_cancelled(
    postgres: Postgres, executor: GatewayExecutor, stubborn: None
) -> None:
    # The server's statement_timeout fires once and is caught; the gateway's cancel is not.
    query = unchecked(policy(postgres), "SELECT sp_catches_once() AS v", timeout_s=TIMEOUT_S)
    error, elapsed = _timed_out(executor, query)
    assert elapsed <= CONTRACT_S and error.stopped_by == "cancel"
    assert _gone(postgres, "sp_catches_once")
    _next_query_works(executor, postgres)


def test_a_statement_the_server_timeout_stops_needs_no_step_of_the_gateway(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # Lifting the timeout from inside the statement comes too late for the statement itself.
    query = unchecked(
        policy(postgres),
        "SELECT set_config('statement_timeout', '0', true), pg_sleep(30) AS v",
        timeout_s=TIMEOUT_S,
    )
    error, elapsed = _timed_out(executor, query)
    assert elapsed <= CONTRACT_S and error.stopped_by is None
    assert _gone(postgres, "pg_sleep(30)")
    _next_query_works(executor, postgres)


def test_a_role_issued_for_one_query_is_stopped_the_same_way(
    postgres: Postgres, executor: GatewayExecutor, stubborn: None
) -> None:
    # The connection of a per-query role is never pooled; its deadline holds all the same.
    issued = BasicSecret(username=READER, password=SecretBytes(CANARY.encode()))
    query = unchecked(policy(postgres), "SELECT sp_stubborn_deaf() AS v", timeout_s=TIMEOUT_S)
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.sql_query(query, issued)
    assert time.monotonic() - started <= CONTRACT_S
    assert caught.value.failure == "timeout" and caught.value.stopped_by == "terminate"
    assert _gone(postgres, "sp_stubborn_deaf")


def test_a_query_within_its_time_is_not_stopped_and_its_connection_stays_pooled(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    near = unchecked(policy(postgres), "SELECT pg_sleep(0.3) AS v", timeout_s=TIMEOUT_S)
    for _ in range(3):
        assert executor.sql_query(near, password()).rows == [[""]]
    assert executor.pooled_sql_connections == 1
