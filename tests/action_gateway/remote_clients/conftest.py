from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.real_tls import TlsServer, running_tls_server


@pytest.fixture(scope="session")
def documents_server() -> Iterator[TlsServer]:
    """A real HTTPS server on 127.0.0.1 (test CA) serving client metadata documents."""
    with running_tls_server() as server:
        yield server
