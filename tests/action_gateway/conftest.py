"""Real parts for the gateway's rooms: one TLS server per test session, reached by the HTTPS
executor's tests and by the approvals and ladder tests that run it inside a real gateway."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.real_tls import TlsServer, running_tls_server


@pytest.fixture(scope="session")
def tls_server() -> Iterator[TlsServer]:
    with running_tls_server() as server:
        yield server
