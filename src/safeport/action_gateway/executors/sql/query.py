"""One declared query on an open connection: read-only, one statement, capped, rolled back.

Each call is one transaction: ``BEGIN READ ONLY``; the statement, lock and idle timeouts set
for that transaction only, with the role's privileges read again in the same round trip; the
statement declared as a server-side cursor (one statement through the extended protocol:
``DECLARE … CURSOR FOR`` takes only a SELECT or VALUES, and no data-modifying WITH); rows
fetched in small batches up to ``max_rows`` and ``max_bytes``; always ``ROLLBACK``. A
watch (sql/deadline.py) stops the query from outside when ``timeout_s`` passes, in case the
statement changed its own timeout or catches the cancel.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import ipaddress
import time
import uuid
from collections.abc import Sequence
from functools import lru_cache

import psycopg
from psycopg.pq import TransactionStatus

from safeport.action_gateway.executors.interface import ActionError, SqlAction, StoppedBy
from safeport.action_gateway.executors.sql.deadline import QueryWatch, Terminate
from safeport.action_gateway.executors.sql.role import (
    PRIVILEGE_QUERY,
    RolePrivileges,
    role_problems,
)
from safeport.shared.known_secrets import KnownSecrets
from safeport.shared.schemas.wire import SqlResult
from safeport.shared.sql_statement import driver_text

_BATCH = 100
# A declared statement's text for the driver depends on the policy's text alone: parsed once,
# not at every call (the policy holds a bounded number of statements).
_declared_text = lru_cache(maxsize=1024)(driver_text)
# Constant text: the timeouts are bound values, the role query has none.
_LIMITS = (
    "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true),"
    " set_config('idle_in_transaction_session_timeout', %s, true), p.*"
)
_LIMITS_AND_ROLE = " ".join((_LIMITS, "FROM (", PRIVILEGE_QUERY, ") p"))
_DECLARE = "DECLARE safeport_query NO SCROLL CURSOR FOR "
# A session-level advisory lock outlives ROLLBACK: let go after every call, or a pooled
# connection would hold what a declared statement (or a function it calls) took.
_UNLOCK = "SELECT pg_advisory_unlock_all()"
Connection = psycopg.Connection[tuple[object, ...]]


def run_query(
    conn: Connection,
    action: SqlAction,
    password: str | None,
    terminate: Terminate | None = None,
    deadline: float | None = None,
) -> SqlResult:
    """Run ``action`` read-only on ``conn``; the caller translates psycopg's errors and drops
    the connection if this raises. ``terminate`` ends the backend from a second connection
    when neither a cancel nor shutting this one's socket did. ``deadline`` (monotonic): when the
    call began, connecting included; ``timeout_s`` from now without one."""
    query = action.query
    started = time.monotonic()
    remaining = query.timeout_s if deadline is None else deadline - started
    if remaining <= 0:
        # Connecting took all of it: the statement is not sent at all.
        raise _out_of_time(action, None)
    watch = QueryWatch(conn, remaining, terminate)
    try:
        with watch:
            columns, rows, truncated = _pipelined(conn, action)
    except psycopg.Error:
        if watch.fired:
            # Cancelled, or its socket shut: whatever psycopg says, the query ran out of time.
            raise _out_of_time(action, watch.stopped_by) from None
        raise
    finally:
        if (
            not watch.fired
            and not conn.closed
            and conn.info.transaction_status != TransactionStatus.IDLE
        ):
            # More batches were fetched, or an error stopped the pipeline before its ROLLBACK.
            with conn.pipeline():
                conn.execute("ROLLBACK")
                conn.execute(_UNLOCK)
    if watch.fired:
        # The watch fired as the query ended: its cancel request may still reach the server
        # and would cancel the next query on this connection, so the connection is dropped.
        raise _out_of_time(action, watch.stopped_by)
    # The values as the server sent them (a bytea as its bytes, a json value parsed), before
    # they are encoded for the reply; the ladder checks the encoded forms again
    # (ladder/result_filters.py), for every executor alike.
    if password and KnownSecrets([password]).found_in_value([columns, rows]):
        raise ActionError(
            "bad_response",
            f"sql database {action.database_id!r}: the result holds the credential; withheld whole",
        )
    values = [[_json_value(value) for value in row] for row in rows]
    return SqlResult(
        columns=columns,
        rows=values,
        row_count=len(values),
        truncated=truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _out_of_time(action: SqlAction, stopped_by: StoppedBy | None) -> ActionError:
    return ActionError(
        "timeout",
        f"sql database {action.database_id!r}: the query ran out of time",
        stopped_by=stopped_by,
    )


def _pipelined(
    conn: Connection, action: SqlAction
) -> tuple[list[str], list[Sequence[object]], bool]:
    """BEGIN READ ONLY, the limits with the role's privileges, the cursor's DECLARE and its
    first FETCH, sent in one round trip (psycopg's pipeline mode); the role is judged before
    any row is kept, and further batches are fetched only while the caps allow."""
    query = action.query
    ms = str(int(query.timeout_s * 1000))
    idle = str(int(query.timeout_s * 1000) + 5000)
    first = min(_BATCH, query.max_rows + 1)
    # A query whose every row fits one batch ends its transaction in the same round trip.
    whole = first == query.max_rows + 1
    with conn.pipeline():
        conn.execute("BEGIN READ ONLY")
        limits = conn.execute(_LIMITS_AND_ROLE, (ms, ms, idle))
        # DECLARE takes one SELECT or VALUES (never a data-modifying WITH); the statement is the
        # declared text, its values bound through the extended protocol.
        conn.execute(_DECLARE + _declared_text(query.statement), dict(action.bound), prepare=False)
        batch = conn.execute(f"FETCH FORWARD {first} FROM safeport_query", prepare=False)
        if whole:
            conn.execute("ROLLBACK")
            conn.execute(_UNLOCK)
    _check_role(limits.fetchone(), action)
    columns = [column.name for column in batch.description or ()]
    rows: list[Sequence[object]] = []
    size = 0
    fetched = batch.fetchall()
    while True:
        for row in fetched:
            if len(rows) == query.max_rows:
                return columns, rows, True
            size += sum(_size(value) for value in row)
            if size > query.max_bytes:
                return columns, rows, True
            rows.append(row)
        if len(fetched) < first:
            return columns, rows, False
        first = min(_BATCH, query.max_rows + 1 - len(rows))
        fetched = conn.execute(f"FETCH FORWARD {first} FROM safeport_query").fetchall()
    # (the transaction, and the cursor with it, is rolled back by run_query)


def _check_role(row: Sequence[object] | None, action: SqlAction) -> None:
    """The role read again inside this transaction: made superuser (or given a server-file
    role) since its connection opened, its rows are never returned."""
    assert row is not None
    file_roles = tuple(str(name) for name in row[4] or ())  # type: ignore[attr-defined]
    functions = tuple(str(name) for name in row[5] or ())  # type: ignore[attr-defined]
    attributes = tuple(str(name) for name in row[6] or ())  # type: ignore[attr-defined]
    creatable = tuple(str(name) for name in row[7] or ())  # type: ignore[attr-defined]
    role = RolePrivileges(
        superuser=bool(row[3]),
        file_roles=file_roles,
        file_functions=functions,
        attributes=attributes,
        creatable=creatable,
    )
    problems = role_problems(action.database_id, action.database, role)
    if problems:
        raise ActionError("role_refused", problems[0] + "; nothing it read is returned")


def _size(value: object) -> int:
    """The value's bytes and its JSON punctuation (quotes, comma), so that the reply's size is
    bounded by a multiple of ``max_bytes`` however small each value is."""
    if isinstance(value, bytes | bytearray | memoryview):
        return 4 * len(value) // 3 + 6  # sent as base64
    return len(str(value).encode("utf-8", "replace")) + 3


def _json_value(value: object) -> object:
    """A value as JSON carries it: numbers, text, booleans, null, and JSON itself; dates in ISO
    form; bytes as base64; everything else as PostgreSQL's text of it."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    if isinstance(value, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(value)
    return str(value)
