"""Where `sp vault …` sends its work, one test per case, against real sockets."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from safeport.gateway_client.vault_backend import GatewayVaultBackend
from safeport.gateway_client.vault_route import vault_backend_for
from safeport.shared.install_file import DedicatedInstall
from safeport.shared.paths import SafeportPaths, layout
from safeport.vault.backend import FileVaultBackend


@pytest.fixture
def paths(tmp_path: Path) -> SafeportPaths:
    found = layout({"SAFEPORT_HOME": str(tmp_path)})
    found.run_dir.mkdir(mode=0o700)
    return found


@pytest.fixture
def listening(paths: SafeportPaths) -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(paths.control_socket))
    server.listen()
    yield server
    server.close()


def test_with_no_socket_file_the_vault_file_is_opened(paths: SafeportPaths) -> None:
    assert isinstance(vault_backend_for(paths), FileVaultBackend)


def test_a_stale_socket_left_by_a_gateway_that_is_gone_opens_the_vault_file(
    paths: SafeportPaths,
) -> None:
    gone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    gone.bind(str(paths.control_socket))
    gone.close()  # the file stays; nobody accepts on it
    assert paths.control_socket.exists()
    assert isinstance(vault_backend_for(paths), FileVaultBackend)


def test_while_a_gateway_listens_the_work_goes_to_it_not_to_the_file(
    paths: SafeportPaths, listening: socket.socket
) -> None:
    backend = vault_backend_for(paths)
    assert isinstance(backend, GatewayVaultBackend)
    listening.settimeout(5)
    probe, _ = listening.accept()  # the choice connected, and sent nothing
    probe.settimeout(5)
    assert probe.recv(1) == b""
    probe.close()


def test_in_dedicated_mode_the_gateway_is_asked_even_when_nothing_listens(
    paths: SafeportPaths, tmp_path: Path
) -> None:
    install = DedicatedInstall(
        source=tmp_path / "install.toml",
        account="safeport",
        uid=12345,
        gid=12345,
        state_dir=tmp_path / "state",
        run_dir=tmp_path / "account-run",
        humans=(0,),
    )
    dedicated = replace(paths, install=install)
    assert not dedicated.control_socket.exists()
    assert isinstance(vault_backend_for(dedicated), GatewayVaultBackend)
