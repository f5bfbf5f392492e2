"""Connections per database, reused between queries, every one inspected when it opens.

A new connection is refused (and closed) when its role holds more than the policy allows;
each query then checks superuser and the server-file roles again inside its own transaction.
A connection that saw any failure (a query past its deadline among them) is closed, never
pooled. :meth:`SqlPool.close_all` (vault
lock, credential rotation, gateway stop) closes the idle ones at once and the busy ones as
they finish.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable

import psycopg

from safeport.action_gateway.executors.interface import ActionError, SqlAction
from safeport.action_gateway.executors.sql.connection import (
    DbSecret,
    open_connection,
    translate_errors,
)
from safeport.action_gateway.executors.sql.deadline import (
    CHECK_CLIENT,
    TERMINATE,
    TERMINATE_WAITING,
    QueryWatch,
    Terminate,
)
from safeport.action_gateway.executors.sql.query import run_query
from safeport.action_gateway.executors.sql.role import (
    PRIVILEGE_QUERY,
    WRITE_QUERY,
    RolePrivileges,
    role_problems,
)
from safeport.shared.schemas.config import GatewayPolicy, SqlDatabase
from safeport.shared.schemas.wire import SqlResult
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret

Connection = psycopg.Connection[tuple[object, ...]]
_IDLE_PER_DATABASE = 4


class SqlPool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, str], list[Connection]] = {}
        self._generation = 0

    def run(self, action: SqlAction, secret: DbSecret) -> SqlResult:
        # One deadline from the call on: connecting, inspecting the role and the query itself
        # all come out of the same timeout_s.
        deadline = time.monotonic() + action.query.timeout_s
        key = (action.database_id, _fingerprint(action.database))
        if isinstance(secret, BasicSecret):
            return _run_once(action, secret, deadline)
        with self._lock:
            generation = self._generation
            idle = self._idle.get(key)
            conn = idle.pop() if idle else None
        if conn is None:
            conn = connect_inspected(action.database_id, action.database, secret, deadline)
        healthy = False
        try:
            with translate_errors(action.database_id, secret):
                password = (
                    secret.token.reveal().decode() if isinstance(secret, TokenSecret) else None
                )
                stop = backend_terminator(action.database_id, action.database, secret)
                result = run_query(conn, action, password, stop, deadline)
            healthy = True
            return result
        finally:
            self._give_back(key, conn, generation, healthy)

    def close_all(self) -> None:
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(conns) for conns in self._idle.values())

    def _give_back(
        self, key: tuple[str, str], conn: Connection, generation: int, healthy: bool
    ) -> None:
        keep = healthy and not conn.closed and conn.info.transaction_status == 0  # IDLE
        with self._lock:
            pooled = self._idle.setdefault(key, [])
            if keep and generation == self._generation and len(pooled) < _IDLE_PER_DATABASE:
                pooled.append(conn)
                return
        conn.close()


def _run_once(action: SqlAction, secret: BasicSecret, deadline: float) -> SqlResult:
    """A role issued for this query: its connection closes with it, before its lease is revoked,
    and is never pooled for another query."""
    conn = connect_inspected(action.database_id, action.database, secret, deadline)
    try:
        with translate_errors(action.database_id, secret):
            stop = backend_terminator(action.database_id, action.database, secret)
            return run_query(conn, action, secret.password.reveal().decode(), stop, deadline)
    finally:
        conn.close()


def connect_inspected(
    database_id: str, database: SqlDatabase, secret: DbSecret, deadline: float | None = None
) -> Connection:
    """A new connection whose role passed the inspection, or an :class:`ActionError`; with a
    ``deadline`` (a query's, monotonic), connecting and the inspection end by it."""
    within = None if deadline is None else deadline - time.monotonic()
    conn = open_connection(database_id, database, secret, within_s=within)
    try:
        with translate_errors(database_id, secret):
            role = _inspect(conn, database_id, deadline)
        problems = role_problems(database_id, database, role)
        if problems:
            raise ActionError("role_refused", "; ".join(problems))
    except BaseException:
        conn.close()
        raise
    return conn


def _inspect(conn: Connection, database_id: str, deadline: float | None) -> RolePrivileges:
    """The role read, and the lost-client check set, watched like a query when the caller has
    a deadline: a catalog locked by another session, or a backend that stopped answering, holds
    the answer no longer than the query's own statement would."""
    if deadline is None:
        return _read_and_set(conn)
    watch = QueryWatch(conn, deadline - time.monotonic(), None)
    try:
        with watch:
            role = _read_and_set(conn)
    except psycopg.Error:
        if not watch.fired:
            raise
        role = None
    if watch.fired or role is None:
        raise ActionError(
            "timeout",
            f"sql database {database_id!r}: the connection was not ready in time",
            stopped_by=watch.stopped_by,
        )
    return role


def _read_and_set(conn: Connection) -> RolePrivileges:
    role = read_role(conn)
    if conn.info.server_version >= 140000:
        conn.execute(CHECK_CLIENT)
    return role


def backend_terminator(database_id: str, database: SqlDatabase, secret: DbSecret) -> Terminate:
    """Terminate a backend of this role from a second connection (the last step of a query's
    deadline); any failure is a backend not terminated, never an error of the query. None: the
    server could not be asked at all."""

    def terminate(pid: int, since_closed_s: float) -> bool | None:
        try:
            with open_connection(database_id, database, secret) as conn:
                waits = conn.info.server_version >= 140000
                text = TERMINATE_WAITING if waits else TERMINATE
                row = conn.execute(text, (pid, since_closed_s)).fetchone()
                return bool(row and row[0])
        except (ActionError, psycopg.Error, OSError):
            return None  # not asked (no free connection slot, say): the watch tries again

    return terminate


def read_role(conn: Connection) -> RolePrivileges:
    """Everything :func:`role_problems` judges, read in one read-only transaction."""
    privileges = conn.execute(PRIVILEGE_QUERY).fetchone()  # autocommit: read-only by default
    writes = conn.execute(WRITE_QUERY).fetchone()
    assert privileges is not None and writes is not None
    return RolePrivileges(
        superuser=bool(privileges[0]),
        file_roles=tuple(str(name) for name in privileges[1] or ()),  # type: ignore[attr-defined]
        writable_tables=int(writes[0]),  # type: ignore[call-overload]
        writable_examples=tuple(str(name) for name in writes[1] or ()),  # type: ignore[attr-defined]
        file_functions=tuple(str(name) for name in privileges[2] or ()),  # type: ignore[attr-defined]
        attributes=tuple(str(name) for name in privileges[3] or ()),  # type: ignore[attr-defined]
        creatable=tuple(str(name) for name in privileges[4] or ()),  # type: ignore[attr-defined]
    )


def inspect_roles(
    policy: GatewayPolicy, secret_of: Callable[[str], object]
) -> tuple[list[str], list[str]]:
    """Connect to each declared database as its role: what its role holds beyond what the
    policy allows, a CA or credential it refuses (problems), and what could not be judged now
    (notes: a server that does not answer), in words."""
    problems: list[str] = []
    notes: list[str] = []
    for database_id, database in sorted(policy.sql.databases.items()):
        if policy.credentials[database.credential].database_role is not None:
            # No role exists before a query asks for one: each is inspected as it connects.
            notes.append(f"sql database {database_id!r}: its roles are issued per query by "
                         "OpenBao and inspected on each connection")  # fmt: skip
            continue
        secret = secret_of(database.credential)
        if not isinstance(secret, TokenSecret | SshKeySecret):
            problems.append(
                f"sql database {database_id!r}: its credential is not a password or key"
            )
            continue
        try:
            connect_inspected(database_id, database, secret).close()
        except ActionError as exc:
            # A server that cannot be reached now is a note (nothing runs without this check
            # on connect); one that refuses the pinned CA or the credential is a problem.
            (notes if exc.failure in ("unreachable", "timeout") else problems).append(exc.message)
        finally:
            secret.wipe()
    return problems, notes


def _fingerprint(database: SqlDatabase) -> str:
    """Connections are pooled per database *as declared*: an accepted edit never reuses one."""
    return hashlib.sha256(database.model_dump_json().encode()).hexdigest()
