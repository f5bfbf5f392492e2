"""The SSH executor's own real part: a second sshd, one per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.real_sshd import SSHD, Sshd, running_sshd
from tests.conftest import need


@pytest.fixture(scope="session")
def _impostor_session() -> Iterator[Sshd | None]:
    if SSHD is None:
        yield None
        return
    with running_sshd() as server:
        yield server


@pytest.fixture
def impostor_sshd(_impostor_session: Sshd | None) -> Sshd:
    """A second real sshd with its own host key (a server that is not the pinned one)."""
    need(
        _impostor_session is not None, "OpenSSH sshd is not installed (apt install openssh-server)"
    )
    assert _impostor_session is not None
    return _impostor_session
