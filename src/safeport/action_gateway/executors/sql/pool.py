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
from collections.abc import Callable

import psycopg

from safeport.action_gateway.executors.interface import ActionError, SqlAction
from safeport.action_gateway.executors.sql.connection import (
    DbSecret,
    open_connection,
    translate_errors,
)
from safeport.action_gateway.executors.sql.deadline import CHECK_CLIENT, TERMINATE, Terminate
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
        key = (action.database_id, _fingerprint(action.database))
        if isinstance(secret, BasicSecret):
            return _run_once(action, secret)
        with self._lock:
            generation = self._generation
            idle = self._idle.get(key)
            conn = idle.pop() if idle else None
        if conn is None:
            conn = connect_inspected(action.database_id, action.database, secret)
        healthy = False
        try:
            with translate_errors(action.database_id, secret):
                password = (
                    secret.token.reveal().decode() if isinstance(secret, TokenSecret) else None
                )
                stop = backend_terminator(action.database_id, action.database, secret)
                result = run_query(conn, action, password, stop)
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


def _run_once(action: SqlAction, secret: BasicSecret) -> SqlResult:
    """A role issued for this query: its connection closes with it, before its lease is revoked,
    and is never pooled for another query."""
    conn = connect_inspected(action.database_id, action.database, secret)
    try:
        with translate_errors(action.database_id, secret):
            stop = backend_terminator(action.database_id, action.database, secret)
            return run_query(conn, action, secret.password.reveal().decode(), stop)
    finally:
        conn.close()


def connect_inspected(database_id: str, database: SqlDatabase, secret: DbSecret) -> Connection:
    """A new connection whose role passed the inspection, or an :class:`ActionError`."""
    conn = open_connection(database_id, database, secret)
    try:
        with translate_errors(database_id, secret):
            role = read_role(conn)
        problems = role_problems(database_id, database, role)
        if problems:
            raise ActionError("role_refused", "; ".join(problems))
        if conn.info.server_version >= 140000:
            with translate_errors(database_id, secret):
                conn.execute(CHECK_CLIENT)
    except BaseException:
        conn.close()
        raise
    return conn


def backend_terminator(database_id: str, database: SqlDatabase, secret: DbSecret) -> Terminate:
    """Terminate a backend of this role from a second connection (the last step of a query's
    deadline); any failure is a backend not terminated, never an error of the query."""

    def terminate(pid: int, since_closed_s: float) -> bool:
        try:
            with open_connection(database_id, database, secret) as conn:
                row = conn.execute(TERMINATE, (pid, since_closed_s)).fetchone()
                return bool(row and row[0])
        except (ActionError, psycopg.Error, OSError):
            return False

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
