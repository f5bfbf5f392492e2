"""A query's deadline against a server that stalls somewhere other than in the statement: a
listener that never speaks, a backend stopped at the operating system, a lock held by another
session, rows streamed slowly, many stubborn queries at once. Each answer comes within
``timeout_s`` + 2 s of the call, and the pool keeps working after."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_postgres import READER, Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError, SqlAction
from safeport.shared.schemas.config import parse_gateway_policy
from tests.action_gateway.executors.sql.test_sql_deadline import (
    CONTRACT_S,
    TIMEOUT_S,
    _gone,
    stubborn,  # noqa: F401 (a fixture)
)
from tests.action_gateway.executors.sql_policy import (
    action,
    password,
    policy,
    policy_text,
    unchecked,
)

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration


@pytest.fixture
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor()
    yield executor
    executor.close_all()


def _timed(executor: GatewayExecutor, query: SqlAction) -> tuple[ActionError, float]:
    started = time.monotonic()
    with pytest.raises(ActionError) as caught:
        executor.sql_query(query, password())
    elapsed = time.monotonic() - started
    assert CANARY not in str(caught.value)
    return caught.value, elapsed


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (nor reads one)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_a_server_that_accepts_and_never_speaks_is_given_up_on_within_the_query_deadline(
    postgres: Postgres, executor: GatewayExecutor, silent_listener: int
) -> None:
    # The database's connect_timeout_s (5 s here) is longer than the query's own deadline: the
    # answer is still owed within timeout_s + 2 s of the call.
    text = policy_text(postgres).replace(f"port = {postgres.port}", f"port = {silent_listener}")
    parsed, _ = parse_gateway_policy(text)
    query = unchecked(parsed, "SELECT 1 AS v", timeout_s=TIMEOUT_S)
    error, elapsed = _timed(executor, query)
    assert elapsed <= CONTRACT_S, elapsed
    assert error.failure in {"timeout", "unreachable"}


def test_a_query_waiting_on_a_lock_another_session_holds_ends_in_time(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    with postgres.admin() as admin, admin.transaction():
        admin.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
        query = unchecked(policy(postgres), "SELECT count(*) AS v FROM orders", timeout_s=TIMEOUT_S)
        error, elapsed = _timed(executor, query)
    assert elapsed <= CONTRACT_S and error.failure == "timeout"
    fresh = executor.sql_query(action(policy(postgres), "order_count", min_id=0), password())
    assert fresh.rows == [[4]]


def test_a_sleep_inside_a_cte_and_rows_streamed_slowly_end_in_time(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    for statement in (
        "WITH s AS MATERIALIZED (SELECT pg_sleep(30) AS v) SELECT v FROM s",
        # Each FETCH of a batch stays under the server's statement_timeout; all of them do not.
        "SELECT pg_sleep(0.05)::text || g AS v FROM generate_series(1, 100000) g",
    ):
        query = unchecked(parsed, statement, timeout_s=TIMEOUT_S, max_rows=100000)
        error, elapsed = _timed(executor, query)
        assert elapsed <= CONTRACT_S and error.failure == "timeout", statement
        assert _gone(postgres, statement[:20])


def _reader_backend(postgres: Postgres) -> int:
    with postgres.admin() as admin:
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s AND application_name = 'safeport'",
            (READER,),
        ).fetchall()
    assert len(row) == 1, row
    pid = row[0][0]
    assert isinstance(pid, int)
    return pid


def test_a_backend_stopped_by_the_operating_system_still_gets_an_answer_in_time(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]
    pid = _reader_backend(postgres)  # the pooled connection's backend
    os.kill(pid, signal.SIGSTOP)
    try:
        query = unchecked(parsed, "SELECT count(*) AS v FROM orders", timeout_s=TIMEOUT_S)
        error, elapsed = _timed(executor, query)
    finally:
        os.kill(pid, signal.SIGCONT)
    # Neither its cancel nor its terminate can work on it: the socket shut still frees the call.
    assert elapsed <= CONTRACT_S, elapsed
    assert error.failure == "timeout"
    # A stopped process cannot be seen to end: the journal does not claim it was terminated.
    assert error.stopped_by == "close", error.stopped_by
    assert executor.pooled_sql_connections == 0
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]


def test_many_stubborn_queries_at_once_neither_leak_nor_poison_the_pool(
    postgres: Postgres,
    executor: GatewayExecutor,
    stubborn: None,  # noqa: F811
) -> None:
    parsed = policy(postgres)
    query = unchecked(parsed, "SELECT sp_stubborn() AS v", timeout_s=TIMEOUT_S)
    errors: list[tuple[ActionError, float]] = []

    def one() -> None:
        errors.append(_timed(executor, query))

    threads = [threading.Thread(target=one) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(errors) == 10
    assert all(e.failure == "timeout" for e, _ in errors)
    # Ten at once on a 2-core machine: each within its bound plus the time to get a connection.
    assert max(elapsed for _, elapsed in errors) <= CONTRACT_S + 5.0
    assert _gone(postgres, "sp_stubborn", within_s=20.0)
    assert executor.pooled_sql_connections == 0
    fresh = executor.sql_query(action(parsed, "order_count", min_id=0), password())
    assert fresh.rows == [[4]]


def test_a_role_inspection_held_up_by_a_locked_catalog_ends_within_the_query_deadline(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # A new connection's role is read before its query: a catalog another session holds locked
    # keeps that read waiting, and it is bounded by the query's deadline like the query itself.
    query = unchecked(policy(postgres), "SELECT 1 AS v", timeout_s=TIMEOUT_S)
    with postgres.admin() as admin, admin.transaction():
        admin.execute("LOCK TABLE pg_catalog.pg_namespace IN ACCESS EXCLUSIVE MODE")
        error, elapsed = _timed(executor, query)
    assert elapsed <= CONTRACT_S, elapsed
    assert error.failure == "timeout"
    assert executor.pooled_sql_connections == 0
    assert executor.sql_query(query, password()).rows == [[1]]


def test_a_backend_that_cannot_be_terminated_at_once_for_want_of_a_slot_is_terminated_later(
    postgres: Postgres,
    executor: GatewayExecutor,
    stubborn: None,  # noqa: F811
) -> None:
    # Every ordinary connection slot taken (the superuser's reserved ones remain): the second
    # connection that terminates cannot open when the deadline passes. The answer does not wait
    # for it, and the backend (deaf to its lost client) is terminated once a slot frees.
    parsed = policy(postgres)
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]
    with postgres.admin() as admin:
        row = admin.execute(
            "SELECT current_setting('max_connections')::int"
            " - current_setting('superuser_reserved_connections')::int"
            " - coalesce(current_setting('reserved_connections', true)::int, 0)"
            " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')"
        ).fetchone()
    assert row is not None and isinstance(row[0], int)
    # One more than the ordinary slots left: an ordinary role needs more free than reserved.
    fillers = [postgres.admin() for _ in range(row[0] + 1)]
    try:
        query = unchecked(parsed, "SELECT sp_stubborn_deaf() AS v", timeout_s=TIMEOUT_S)
        error, elapsed = _timed(executor, query)
        assert elapsed <= CONTRACT_S, elapsed
        assert error.failure == "timeout" and error.stopped_by == "close"
    finally:
        for conn in fillers:
            conn.close()
    assert _gone(postgres, "sp_stubborn_deaf"), "the deaf backend was never terminated"
