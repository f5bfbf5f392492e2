"""Shared fixtures. Integration parts skip with a reason, unless CI demands them.

A real server used by more than one room's tests starts here, once per test session (per xdist
worker); a room's own real parts start in its folder's conftest.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import Gateway
from harness.real_postgres import INITDB, Postgres, running_postgres
from harness.real_sshd import SSHD, Sshd, running_sshd
from harness.real_tsa import OPENSSL, TsaServer, running_tsa
from tests.hostile_folder import HostileFolder, plant

REQUIRE_INTEGRATION = os.environ.get("SAFEPORT_REQUIRE_INTEGRATION") == "1"


def need(condition: bool, reason: str) -> None:
    """Skip when a real part is missing here; fail instead when CI requires every part."""
    if condition:
        return
    if REQUIRE_INTEGRATION:
        pytest.fail(f"SAFEPORT_REQUIRE_INTEGRATION=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def safeport_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "sp-home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    yield home


@pytest.fixture
def hostile(tmp_path: Path) -> HostileFolder:
    """A project folder full of code that must never run (see hostile_folder.py)."""
    return plant(tmp_path / "project", tmp_path / "marks")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private HOME for a client's configuration (modules may define their own)."""
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    return folder


@pytest.fixture
def gateway_home(tmp_path: Path) -> Path:
    home = tmp_path / "h"  # short: socket paths have a length limit
    home.mkdir(mode=0o700)
    return home


@pytest.fixture
def gateway(gateway_home: Path) -> Iterator[Gateway]:
    """A running gateway, unlocked, serving the test policy (the gateway's and the context
    server's end-to-end tests both drive one)."""
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        rc = gw.stop()
        assert rc == 0, gw.stderr_path.read_text()


@pytest.fixture(scope="session")
def _postgres_session() -> Iterator[Postgres | None]:
    if INITDB is None:
        yield None
        return
    with running_postgres() as server:
        yield server


@pytest.fixture
def postgres(_postgres_session: Postgres | None) -> Postgres:
    """Debian's PostgreSQL on 127.0.0.1 with TLS from a test CA, one per test session."""
    need(_postgres_session is not None, "PostgreSQL is not installed (apt install postgresql)")
    assert _postgres_session is not None
    return _postgres_session


@pytest.fixture(scope="session")
def _sshd_session() -> Iterator[Sshd | None]:
    if SSHD is None:
        yield None
        return
    with running_sshd() as server:
        yield server


@pytest.fixture
def sshd(_sshd_session: Sshd | None) -> Sshd:
    """A real OpenSSH sshd on 127.0.0.1, one per test session (the executors, `sp ssh scan` and
    the security-key run through `sp` all reach it)."""
    need(_sshd_session is not None, "OpenSSH sshd is not installed (apt install openssh-server)")
    assert _sshd_session is not None
    return _sshd_session


@pytest.fixture(scope="session")
def _tsa_session() -> Iterator[TsaServer | None]:
    if OPENSSL is None:
        yield None
        return
    with running_tsa() as server:
        yield server


@pytest.fixture
def tsa(_tsa_session: TsaServer | None) -> TsaServer:
    """OpenSSL's own RFC 3161 time-stamping (`openssl ts -reply`) behind a loopback HTTP
    endpoint, with a TSA certificate from a test CA, one per test session."""
    need(_tsa_session is not None, "openssl is not installed (apt install openssl)")
    assert _tsa_session is not None
    return _tsa_session
