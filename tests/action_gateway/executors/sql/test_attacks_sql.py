"""Attacks on run_readonly_query against a real PostgreSQL, each beside the legitimate use.

The guard that holds is the database's: a READ ONLY transaction always rolled back, a role
without write privileges or server-file roles, one statement through the extended protocol,
per-transaction timeouts. Where the policy check would refuse a statement in words, the test
builds the query past the check (``unchecked``) to show the database stops it too.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from harness.fakes import CANARY
from harness.real_postgres import WRITER, WRITER_PASSWORD, Postgres
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.sql_statement import StatementRefused, check_statement
from tests.action_gateway.executors.sql_policy import action, password, policy, unchecked

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.executors.sql"

pytestmark = pytest.mark.integration


@pytest.fixture
def executor() -> Iterator[GatewayExecutor]:
    executor = GatewayExecutor()
    yield executor
    executor.close_all()


def _refused(executor: GatewayExecutor, sql: object, secret: object = None) -> ActionError:
    with pytest.raises(ActionError) as caught:
        executor.sql_query(sql, secret or password())  # type: ignore[arg-type]
    assert CANARY not in str(caught.value) and CANARY not in repr(caught.value)
    return caught.value


def test_values_that_close_the_string_or_add_statements_are_only_values(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    legit = executor.sql_query(action(parsed, "orders_of", customer="o'brien"), password())
    assert legit.rows == [[4, "o'brien", "1.00", "quote", "2026-01-05"]]
    for value in [
        "alice' OR '1'='1",
        "alice'; DELETE FROM orders; --",
        "x'); COMMIT; SET TRANSACTION READ WRITE; INSERT INTO orders VALUES (9,'m',0,'',now()); --",
        "$$; DROP TABLE orders; $$",
        "alice\\'; SELECT pg_read_file('/etc/passwd'); --",
    ]:
        assert (
            executor.sql_query(action(parsed, "orders_of", customer=value), password()).rows == []
        )
    with postgres.admin() as admin:
        assert admin.execute("SELECT count(*) FROM orders").fetchone() == (4,)


def test_a_second_statement_or_a_commit_in_the_statement_never_runs(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    assert executor.sql_query(unchecked(parsed, "SELECT 1 AS v"), password()).rows == [[1]]
    for statement in [
        "SELECT 1 AS v; COMMIT; SET TRANSACTION READ WRITE; CREATE TABLE pwned (a int)",
        "COMMIT",
        "SET TRANSACTION READ WRITE",
        "SELECT 1 AS v; SELECT 2",
    ]:
        _refused(executor, unchecked(parsed, statement))
    with postgres.admin() as admin:
        assert admin.execute("SELECT to_regclass('pwned')").fetchone() == (None,)


def test_a_role_that_can_write_is_refused_and_if_allowed_the_transaction_still_stops_writes(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    writer = policy(postgres, user=WRITER)
    refused = _refused(executor, action(writer, "order_count", min_id=0), password(WRITER_PASSWORD))
    assert refused.failure == "role_refused" and "may write to 1 table(s)" in refused.message
    allowed = policy(
        postgres, user=WRITER, extra='allow_write_privileges = "the reporting role, shared"'
    )
    secret = password(WRITER_PASSWORD)
    ok = executor.sql_query(action(allowed, "order_count", min_id=0), password(WRITER_PASSWORD))
    assert ok.rows == [[4]]
    for statement in [
        "SELECT add_order() AS v",  # a function that INSERTs
        "WITH w AS (INSERT INTO orders VALUES (50, 'w', 0, '') RETURNING id) SELECT id AS v FROM w",
        "SELECT nextval('order_ids') AS v",
    ]:
        failure = _refused(executor, unchecked(allowed, statement), secret).failure
        assert failure == "query_refused"
    with postgres.admin() as admin:
        assert admin.execute("SELECT count(*) FROM orders").fetchone() == (4,)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT pg_read_file('/etc/passwd') AS v",
        "SELECT pg_ls_dir('.') AS v",
        "SELECT lo_export(lo_from_bytea(0, 'x'), '/tmp/sp-pwned') AS v",
        "SELECT value AS v FROM secrets_table",
        "SELECT dblink_exec('host=127.0.0.1 dbname=app user=sp_admin',"
        " 'CREATE TABLE pwned (a int)') AS v",
        "SELECT set_config('default_transaction_read_only', 'off', false) AS v, add_order() AS w",
    ],
)
def test_functions_with_side_effects_or_file_access_are_refused_by_the_database(
    postgres: Postgres, executor: GatewayExecutor, statement: str
) -> None:
    parsed = policy(postgres)
    assert executor.sql_query(unchecked(parsed, "SELECT count(*) AS v FROM orders"), password())
    error = _refused(executor, unchecked(parsed, statement))
    assert error.failure == "query_refused"
    with postgres.admin() as admin:
        assert admin.execute("SELECT to_regclass('pwned')").fetchone() == (None,)


def test_set_config_cannot_lift_the_timeout_of_the_next_call(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    lifted = unchecked(parsed, "SELECT set_config('statement_timeout', '0', false) AS v")
    assert executor.sql_query(lifted, password()).rows == [["0"]]  # rolled back with its txn
    slow = unchecked(parsed, "SELECT pg_sleep(3) AS v", timeout_s=0.5)
    started = time.monotonic()
    assert _refused(executor, slow).failure == "timeout"
    assert time.monotonic() - started < 2.5


def test_a_huge_result_stops_at_the_caps_with_memory_flat(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    tracemalloc.start()
    try:
        result = executor.sql_query(action(parsed, "series"), password())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.truncated and result.row_count < 50  # max_bytes (2000) came first
    assert peak < 2 * 1024 * 1024  # ten million rows declared; a few batches ever held
    rows = unchecked(parsed, "SELECT g AS v FROM generate_series(1, 10000000) g", max_rows=3)
    capped = executor.sql_query(rows, password())
    assert capped.rows == [[1], [2], [3]] and capped.truncated
    small = unchecked(parsed, "SELECT g AS v FROM generate_series(1, 3) g", max_rows=3)
    assert not executor.sql_query(small, password()).truncated


def test_a_slow_query_times_out_and_a_fast_one_does_not(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    fast = unchecked(parsed, "SELECT pg_sleep(0.05) AS v", timeout_s=2.0)
    assert executor.sql_query(fast, password()).row_count == 1
    slow = unchecked(parsed, "SELECT pg_sleep(30) AS v", timeout_s=0.5)
    started = time.monotonic()
    assert _refused(executor, slow).failure == "timeout"
    assert time.monotonic() - started < 3


def test_a_query_that_waits_for_a_lock_gives_up_and_leaves_no_lock_behind(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    locking = unchecked(parsed, "SELECT id AS v FROM orders FOR UPDATE")
    assert _refused(executor, locking).failure == "query_refused"  # FOR UPDATE: read-only txn
    held, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with postgres.admin() as admin, admin.transaction():
            admin.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert held.wait(10)
        waiting = unchecked(parsed, "SELECT count(*) AS v FROM orders", timeout_s=0.5)
        assert _refused(executor, waiting).failure == "timeout"
    finally:
        release.set()
        holder.join(10)
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]
    with postgres.admin() as admin:
        locks = admin.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE a.application_name = 'safeport' AND l.locktype = 'relation'"
        ).fetchone()
        assert locks == (0,)


def test_a_server_with_a_certificate_from_another_ca_is_refused_before_the_password(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    assert executor.sql_query(action(policy(postgres), "order_count", min_id=0), password())
    impostor = policy(postgres, ca_pem=postgres.other_ca_pem)
    assert _refused(executor, action(impostor, "order_count", min_id=0)).failure == "tls_failed"


def test_a_role_made_superuser_after_accept_is_refused_on_connect_and_on_a_pooled_connection(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    postgres.role("promoted", CANARY)
    parsed = policy(postgres, user="promoted")
    assert executor.inspect_roles(parsed, lambda name: password()) == ([], [])
    query = action(parsed, "order_count", min_id=0)
    assert executor.sql_query(query, password()).rows == [[4]]  # pooled now
    assert executor.pooled_sql_connections == 1
    with postgres.admin() as admin:
        admin.execute("ALTER ROLE promoted SUPERUSER")
    try:
        pooled = _refused(executor, query)  # the pooled connection asks again in its txn
        assert pooled.failure == "role_refused"
        assert executor.pooled_sql_connections == 0
        fresh = _refused(executor, query)  # a new connection is inspected
        assert fresh.failure == "role_refused" and "superuser" in fresh.message
        problems, _ = executor.inspect_roles(parsed, lambda name: password())
        assert problems and "superuser" in problems[0]
    finally:
        with postgres.admin() as admin:
            admin.execute("ALTER ROLE promoted NOSUPERUSER")
    postgres.role("filereader", CANARY, "GRANT pg_read_server_files TO filereader")
    file_role = action(policy(postgres, user="filereader"), "order_count", min_id=0)
    assert "pg_read_server_files" in _refused(executor, file_role).message


def test_the_password_never_appears_in_an_error(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    wrong = f"wrong-{CANARY}"
    error = _refused(executor, action(policy(postgres), "order_count", min_id=0), password(wrong))
    assert error.failure == "auth_failed" and wrong not in str(error)
    echo = unchecked(policy(postgres), f"SELECT 'the password is {CANARY}' AS v")
    assert _refused(executor, echo).failure == "bad_response"  # the credential echoed back


def test_a_session_advisory_lock_taken_by_a_query_is_not_held_by_the_pooled_connection(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    parsed = policy(postgres)
    assert executor.sql_query(action(parsed, "order_count", min_id=0), password()).rows == [[4]]

    def advisory_locks() -> object:
        with postgres.admin() as admin:
            return admin.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                " WHERE a.application_name = 'safeport' AND l.locktype = 'advisory'"
            ).fetchone()

    # A session lock outlives ROLLBACK; in one batch or over several FETCHes, it is let go.
    for statement, max_rows in [
        ("SELECT pg_advisory_lock(4242) AS v", 100),
        ("SELECT pg_advisory_lock(g) AS v FROM generate_series(1, 250) g", 1000),
    ]:
        locking = unchecked(parsed, statement, max_rows=max_rows)
        assert executor.sql_query(locking, password()).row_count in (1, 250)
        assert executor.pooled_sql_connections == 1
        assert advisory_locks() == (0,)


def test_a_role_granted_execute_on_a_server_file_function_is_refused_like_a_file_role(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # Not a member of pg_read_server_files, yet pg_read_file reads the data directory
    # (pg_hba.conf, postgresql.auto.conf) for a role granted EXECUTE on it, directly or through
    # a role it may only SET ROLE to.
    postgres.role("plain", CANARY)
    plain = policy(postgres, user="plain")
    assert executor.inspect_roles(plain, lambda name: password()) == ([], [])
    assert executor.sql_query(action(plain, "order_count", min_id=0), password()).rows == [[4]]
    with postgres.admin() as admin:
        admin.execute("DROP ROLE IF EXISTS file_fns")
        admin.execute("CREATE ROLE file_fns NOLOGIN")
        admin.execute("GRANT EXECUTE ON FUNCTION pg_read_file(text) TO file_fns")
    postgres.role("granted", CANARY, "GRANT EXECUTE ON FUNCTION pg_ls_dir(text) TO granted")
    postgres.role("chained", CANARY, "ALTER ROLE chained NOINHERIT", "GRANT file_fns TO chained")
    for user, function in [("granted", "pg_ls_dir"), ("chained", "pg_read_file")]:
        parsed = policy(postgres, user=user)
        problems, _ = executor.inspect_roles(parsed, lambda name: password())
        assert problems and function in problems[0]
        refused = _refused(executor, action(parsed, "order_count", min_id=0))
        assert refused.failure == "role_refused" and function in refused.message
    # Granted after the connection was pooled: refused inside the next query's transaction.
    assert executor.pooled_sql_connections == 1
    with postgres.admin() as admin:
        admin.execute("GRANT EXECUTE ON FUNCTION pg_stat_file(text) TO plain")
    try:
        pooled = _refused(executor, action(plain, "order_count", min_id=0))
        assert pooled.failure == "role_refused" and "pg_stat_file" in pooled.message
    finally:
        with postgres.admin() as admin:
            admin.execute("REVOKE EXECUTE ON FUNCTION pg_stat_file(text) FROM plain")
    allowed = policy(postgres, user="granted", extra='allow_superuser = "log reader for ops"')
    assert executor.sql_query(action(allowed, "order_count", min_id=0), password()).rows == [[4]]


def test_a_statement_is_read_by_the_server_as_the_policy_check_read_it(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # The policy check reads pg_advisory_lock as inside a string in both. With
    # standard_conforming_strings off (set for the role) '\' ended no string; and a non-ASCII
    # letter before $a$ makes it part of a name, not a dollar quote, as the server reads it.
    hidden = [
        "SELECT 'a\\' AS v, ' AS w, pg_advisory_lock(7) AS x --'",
        "SELECT 1 AS v€$a$, pg_advisory_lock(7) AS y€$a$",
    ]
    check_statement(hidden[0], frozenset())
    postgres.role(
        "oldstrings", CANARY, "ALTER ROLE oldstrings SET standard_conforming_strings = off"
    )
    parsed = policy(postgres, user="oldstrings")
    legit = executor.sql_query(unchecked(parsed, "SELECT 'c:\\dir' AS v"), password())
    assert legit.rows == [["c:\\dir"]]  # a backslash is a character, as the check read it
    quoted = executor.sql_query(unchecked(parsed, hidden[0], columns=("v", "?column?")), password())
    assert quoted.rows == [["a\\", " AS w, pg_advisory_lock(7) AS x --"]]
    with pytest.raises(StatementRefused, match="pg_advisory_lock"):
        check_statement(hidden[1], frozenset())  # read as the server reads it (a call)
    called = executor.sql_query(unchecked(parsed, hidden[1], columns=("v€$a$",)), password())
    assert called.rows == [[1, ""]]  # the server did call it: the check now refuses it


def test_a_role_that_owns_a_table_is_refused_even_with_its_own_privileges_revoked(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # An owner may grant itself back what it revoked from itself, at any time.
    postgres.role("owner", CANARY)
    parsed = policy(postgres, user="owner")
    assert executor.inspect_roles(parsed, lambda name: password()) == ([], [])
    with postgres.admin() as admin:
        admin.execute("DROP TABLE IF EXISTS owned")
        admin.execute("CREATE TABLE owned (a int)")
        admin.execute("ALTER TABLE owned OWNER TO owner")
        admin.execute("SET ROLE owner")
        admin.execute("REVOKE ALL ON owned FROM owner")
        admin.execute("RESET ROLE")
    try:
        problems, _ = executor.inspect_roles(parsed, lambda name: password())
        assert problems and "may write to 1 table(s), e.g. public.owned" in problems[0]
    finally:
        with postgres.admin() as admin:
            admin.execute("DROP TABLE owned")


def test_a_role_that_can_grant_itself_more_or_read_past_table_privileges_is_refused(
    postgres: Postgres, executor: GatewayExecutor
) -> None:
    # CREATEROLE (PostgreSQL 15 and older) grants itself pg_read_server_files; REPLICATION
    # streams every table; BYPASSRLS reads the rows row security hides. Given after accept too.
    postgres.role("attrs", CANARY)
    parsed = policy(postgres, user="attrs")
    query = action(parsed, "order_count", min_id=0)
    assert executor.sql_query(query, password()).rows == [[4]]  # pooled now
    for attribute in ("CREATEROLE", "REPLICATION", "BYPASSRLS"):
        with postgres.admin() as admin:
            admin.execute(f"ALTER ROLE attrs {attribute}")
        try:
            pooled = _refused(executor, query)
            assert pooled.failure == "role_refused" and attribute in pooled.message
            problems, _ = executor.inspect_roles(parsed, lambda name: password())
            assert problems and attribute in problems[0]
        finally:
            with postgres.admin() as admin:
                admin.execute(f"ALTER ROLE attrs NO{attribute}")
    allowed = policy(postgres, user="attrs", extra='allow_superuser = "replica monitor, audited"')
    with postgres.admin() as admin:
        admin.execute("ALTER ROLE attrs REPLICATION")
    try:
        assert executor.sql_query(action(allowed, "order_count", min_id=0), password()).rows
    finally:
        with postgres.admin() as admin:
            admin.execute("ALTER ROLE attrs NOREPLICATION")
