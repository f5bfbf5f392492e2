"""A real PostgreSQL (Debian's server) on 127.0.0.1 with TLS from a test CA, started once.

``initdb`` into a temporary folder, run as the ``postgres`` account when the tests run as root
(the server refuses root), with a certificate for 127.0.0.1 from a trustme CA and only
``hostssl`` + SCRAM logins over TCP. The superuser ``sp_admin`` sets things up over the
server's private Unix socket. Database ``app`` holds:

- ``orders`` (readable by ``reader``) and ``secrets_table`` (readable by no one but superuser);
- ``reader``: the least-privileged role, its password the harness's canary, so any leak of the
  credential shows up as the canary;
- ``writer``: a role that may INSERT into ``orders`` (the role a policy must refuse), and a
  function ``add_order()`` that writes, sequence ``order_ids``, and the ``dblink`` extension.

Tests that change a role (make one superuser) create their own role with :meth:`Postgres.role`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import trustme

from harness.fakes import CANARY
from harness.startup import START_S

_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
INITDB: str | None = _BINS[-1] if _BINS else None
READER = "reader"
CERT_USER = "certreader"  # logs in with a client certificate only
WRITER = "writer"
WRITER_PASSWORD = "writer-password-5e1d"

_SETUP = f"""
CREATE DATABASE app;
\\c app
CREATE ROLE {READER} LOGIN PASSWORD '{CANARY}';
CREATE ROLE {CERT_USER} LOGIN;
CREATE ROLE {WRITER} LOGIN PASSWORD '{WRITER_PASSWORD}';
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO {READER}, {WRITER}, {CERT_USER};
CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, total numeric(10,2),
                     note text, created date DEFAULT '2026-01-02');
INSERT INTO orders VALUES
  (1, 'alice', 12.50, 'first', '2026-01-02'), (2, 'bob', 99.00, 'second', '2026-01-03'),
  (3, 'alice', 7.25, 'ghp_q7Lm2XvR9tKc4WbZ8pYd1NsH6jFa3GeU5rTx', '2026-01-04'),
  (4, 'o''brien', 1.00, 'quote', '2026-01-05');
CREATE TABLE secrets_table (value text);
INSERT INTO secrets_table VALUES ('never-served');
CREATE SEQUENCE order_ids;
GRANT SELECT ON orders TO {READER}, {WRITER}, {CERT_USER};
GRANT USAGE, SELECT ON SEQUENCE order_ids TO {READER};
GRANT INSERT ON orders TO {WRITER};
CREATE FUNCTION add_order() RETURNS int LANGUAGE sql VOLATILE
  AS $$ INSERT INTO orders VALUES (100, 'added', 0, 'by a function') RETURNING id $$;
CREATE EXTENSION dblink;
"""


@dataclass(frozen=True)
class Postgres:
    port: int
    ca_pem: str
    other_ca_pem: str  # a CA that did not sign the server's certificate
    socket_dir: Path
    # A client certificate for CERT_USER (its common name), from the server's CA, and its key.
    client_cert_pem: str = ""
    client_key_pem: bytes = b""

    def admin(self, database: str = "app") -> psycopg.Connection[tuple[object, ...]]:
        """The superuser, over the server's private Unix socket, autocommit."""
        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            dbname=database,
            user="sp_admin",
            autocommit=True,
        )

    def role(self, name: str, password: str, *grants: str) -> None:
        """A fresh login role that may read ``orders`` (a test may then change it)."""
        with self.admin() as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{name}"')
            conn.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
            conn.execute(f'GRANT USAGE ON SCHEMA public TO "{name}"')
            conn.execute(f'GRANT SELECT ON orders TO "{name}"')
            for grant in grants:
                conn.execute(grant)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_account(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    assert INITDB is not None
    bin_dir = Path(INITDB).parent
    workdir = Path(tempfile.mkdtemp(prefix="sp-pg-"))
    data = workdir / "data"
    ca, other = trustme.CA(), trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert(CERT_USER, common_name=CERT_USER)
    port = _free_port()
    proc: subprocess.Popen[bytes] | None = None
    try:
        data.mkdir()
        cert.cert_chain_pems[0].write_to_path(str(workdir / "server.crt"))
        cert.private_key_pem.write_to_path(str(workdir / "server.key"))
        ca.cert_pem.write_to_path(str(workdir / "client-ca.crt"))
        (workdir / "server.key").chmod(0o600)
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            for name in ("server.crt", "server.key", "client-ca.crt"):
                os.chown(workdir / name, account.pw_uid, account.pw_gid)
            for path in (workdir, data):
                os.chown(path, account.pw_uid, account.pw_gid)
        subprocess.run(
            _as_server_account(
                [INITDB, "-D", str(data), "-U", "sp_admin", "--auth-local=trust",
                 "--auth-host=reject", "-E", "UTF8", "--no-sync"]
            ),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        (data / "pg_hba.conf").write_text(
            "local all sp_admin trust\n"
            f"hostssl all {CERT_USER} 127.0.0.1/32 cert\n"
            "hostssl all all 127.0.0.1/32 scram-sha-256\n"
            "host all all 0.0.0.0/0 reject\n"
        )
        log = (workdir / "server.log").open("wb")
        proc = subprocess.Popen(
            _as_server_account(
                [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={workdir}",
                 "-c", "ssl=on", "-c", f"ssl_cert_file={workdir / 'server.crt'}",
                 "-c", f"ssl_key_file={workdir / 'server.key'}", "-c", "fsync=off",
                 "-c", f"ssl_ca_file={workdir / 'client-ca.crt'}",
                 "-c", "shared_buffers=16MB", "-c", "max_connections=60",
                 "-c", "password_encryption=scram-sha-256"]
            ),
            stdout=log, stderr=log,
        )  # fmt: skip
        pems = (ca.cert_pem.bytes().decode(), other.cert_pem.bytes().decode())
        server = Postgres(
            port, *pems, workdir,
            client.cert_chain_pems[0].bytes().decode(), client.private_key_pem.bytes(),
        )  # fmt: skip
        _wait_ready(server, proc, workdir / "server.log")
        _setup(bin_dir, server)
        yield server
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)  # a fast shutdown: open sessions are cut
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(server: Postgres, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"postgres exited: {log.read_text(errors='replace')}")
        try:
            server.admin("postgres").close()
            return
        except psycopg.OperationalError:
            time.sleep(0.1)
    raise AssertionError(f"postgres did not come up: {log.read_text(errors='replace')}")


def _setup(bin_dir: Path, server: Postgres) -> None:
    subprocess.run(
        [str(bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", str(server.socket_dir),
         "-p", str(server.port), "-U", "sp_admin", "-d", "postgres"],
        input=_SETUP.encode(), check=True, capture_output=True, timeout=60,
    )  # fmt: skip
