"""Real parts for the gateway's rooms: one TLS server per test session, reached by the HTTPS
executor's tests and by the approvals and ladder tests that run it inside a real gateway; one
real OAuth authorization server per test session, for the OAuth grants' tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.real_oidc import OidcProvider, missing, running_oidc_provider
from harness.real_tls import TlsServer, running_tls_server
from tests.conftest import need


@pytest.fixture(scope="session")
def tls_server() -> Iterator[TlsServer]:
    with running_tls_server() as server:
        yield server


@pytest.fixture(scope="session")
def _oidc_session() -> Iterator[OidcProvider | None]:
    if missing() is not None:
        yield None
        return
    with running_oidc_provider() as provider:
        yield provider


@pytest.fixture
def oidc_provider(_oidc_session: OidcProvider | None) -> Iterator[OidcProvider]:
    """The session's real `oidc-provider` (node, TLS from its own test CA). Access tokens live
    an hour unless a test shortens them; the lifetime is set back after each test."""
    need(_oidc_session is not None, f"the real authorization server cannot run: {missing()}")
    assert _oidc_session is not None
    try:
        yield _oidc_session
    finally:
        _oidc_session.set_access_token_ttl(3600)
