"""Opening one connection to a declared database, and translating psycopg's errors once.

TLS is ``verify-full`` against the CA the policy pins, never the system roots; the password
goes to libpq in memory (never argv or the environment); a client certificate's key is written
to a private file only for the handshake and removed once the connection is open. libpq reads
no service file, password file or client certificate of the gateway's own account. Every
psycopg error is turned into an :class:`ActionError` here, its text stripped of the secret.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import errors as pg_errors

from safeport.action_gateway.executors.interface import ActionError, ActionFailure
from safeport.shared.known_secrets import first_line
from safeport.shared.schemas.config import SqlDatabase
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret

# BasicSecret: a role OpenBao's database engine issued for one query (its own name and password).
DbSecret = TokenSecret | SshKeySecret | BasicSecret
# A memory-backed folder when there is one: the key file never reaches a disk.
_PRIVATE_PARENT = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # noqa: S108


def open_connection(
    database_id: str, database: SqlDatabase, secret: DbSecret, *, within_s: float | None = None
) -> psycopg.Connection[tuple[object, ...]]:
    """A connection as the database's role, TLS verified against the pinned CA, read-only by
    default for every transaction it opens; given up on after ``connect_timeout_s``, or sooner
    when the query it is for has only ``within_s`` seconds left."""
    connect_s = database.connect_timeout_s
    if within_s is not None:
        # libpq bounds the whole attempt (TCP, TLS handshake, authentication) in whole seconds,
        # two at least: below that psycopg reads it as 2, and 0 as no limit at all.
        connect_s = max(2, math.ceil(min(connect_s, within_s)))
    with (
        _tls_files(database, secret) as files,
        translate_errors(database_id, secret, connecting=True),
    ):
        params: dict[str, str | int] = {
            "host": database.host,
            "port": database.port,
            "dbname": database.database,
            "user": secret.username if isinstance(secret, BasicSecret) else database.user,
            "sslmode": "verify-full",
            "sslrootcert": str(files / "ca.pem"),
            "sslcert": str(files / "client.pem"),  # absent unless a certificate is declared
            "sslkey": str(files / "client.key"),
            "passfile": str(files / "none"),
            "connect_timeout": connect_s,
            "gssencmode": "disable",
            "application_name": "safeport",
            "client_encoding": "UTF8",
            # A second guard beside each query's BEGIN READ ONLY: nothing this connection opens
            # may write, the role inspection included; and no statement on it (the inspection
            # of a large catalog, say) runs unbounded before a query sets its own limits. And
            # strings read as the policy check read them (a role or database set to
            # standard_conforming_strings=off would end '\' where the check did not).
            "options": "-c default_transaction_read_only=on -c statement_timeout=30s"
            " -c lock_timeout=10s -c idle_in_transaction_session_timeout=60s"
            " -c standard_conforming_strings=on",
        }
        if isinstance(secret, TokenSecret | BasicSecret):
            # SCRAM with channel binding: the password is never sent, in clear or as a hash an
            # impostor could replay, to a server that is not the one the TLS session reached.
            params["channel_binding"] = "require"
            value = secret.token if isinstance(secret, TokenSecret) else secret.password
            params["password"] = value.reveal().decode("utf-8")
        elif secret.passphrase is not None:
            params["sslpassword"] = secret.passphrase.reveal().decode("utf-8")
        # Autocommit: psycopg opens no transaction of its own; each query's BEGIN READ ONLY
        # and ROLLBACK are sent explicitly (sql/query.py).
        conn: psycopg.Connection[tuple[object, ...]] = psycopg.connect(autocommit=True, **params)  # type: ignore[arg-type]
        return conn


@contextlib.contextmanager
def translate_errors(
    database_id: str, secret: DbSecret, *, connecting: bool = False
) -> Iterator[None]:
    """psycopg's errors as :class:`ActionError`s, each message cut to what the server said and
    scrubbed of the secret (a DSN or a driver message may quote it)."""
    try:
        yield
    except ActionError:
        raise
    except pg_errors.QueryCanceled:
        raise ActionError(
            "timeout", f"sql database {database_id!r}: the query ran out of time"
        ) from None
    except pg_errors.LockNotAvailable:
        raise ActionError(
            "timeout", f"sql database {database_id!r}: a lock was not granted in time"
        ) from None
    except (pg_errors.ReadOnlySqlTransaction, pg_errors.InsufficientPrivilege) as exc:
        raise ActionError("query_refused", _said(database_id, exc, secret)) from None
    except pg_errors.DataError as exc:
        # SQLSTATE class 22: the server could not take a value (`'x'::int`, 1/0). No policy
        # said no; the remote failed on its input.
        raise ActionError("query_failed", _said(database_id, exc, secret)) from None
    except psycopg.OperationalError as exc:
        text = _said(database_id, exc, secret)
        if exc.sqlstate is not None and not connecting:
            # The server answered the statement (dblink refused its own login, say): it is the
            # query that was refused, not this connection.
            raise ActionError("query_refused", text) from None
        failure: ActionFailure = (
            "tls_failed" if "certificate" in text or "SSL" in text else "unreachable"
        )
        if any(word in text for word in ("authentication", "password", "client certificate")):
            failure = "auth_failed"
        raise ActionError(failure, text) from None
    except psycopg.Error as exc:
        raise ActionError("query_refused", _said(database_id, exc, secret)) from None


def _said(database_id: str, exc: BaseException, secret: DbSecret) -> str:
    """The server's first line, redacted before it is cut (a value the server quotes in its
    error may end in the password: a cut first would keep the password's start; so may the
    first line, when the value has a line break in it). DETAIL, HINT and CONTEXT stay out."""
    text = str(exc).strip() or type(exc).__name__
    return f"sql database {database_id!r}: {first_line(text, 300, _secret_texts(secret))}"


def _secret_texts(secret: DbSecret) -> list[str]:
    """The secret's value (or its key's passphrase), as messages must never hold it."""
    if isinstance(secret, TokenSecret):
        value = secret.token.reveal()
    elif isinstance(secret, BasicSecret):
        value = secret.password.reveal()
    elif secret.passphrase is not None:
        value = secret.passphrase.reveal()
    else:
        return []
    return [value.decode("utf-8", "replace")]


@contextlib.contextmanager
def _tls_files(database: SqlDatabase, secret: DbSecret) -> Iterator[Path]:
    """A private folder holding the pinned CA (and the client certificate and key) for libpq,
    which reads them only from files; removed as soon as the connection is open."""
    folder = Path(tempfile.mkdtemp(prefix="sp-sql-", dir=_PRIVATE_PARENT))
    try:
        _write(folder / "ca.pem", database.ca_pem.encode("utf-8"))
        if database.client_cert_pem is not None and isinstance(secret, SshKeySecret):
            _write(folder / "client.pem", database.client_cert_pem.encode("utf-8"))
            with secret.private_key.exposed() as key:
                _write(folder / "client.key", key)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write(path: Path, data: bytes | memoryview) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
