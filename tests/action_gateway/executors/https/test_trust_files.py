"""A service's ``ca_file`` decides whom the credential goes to: it is used only where no served
human (so no agent with a human's shell) can change it or any folder on the way to it."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.real_tls import API_HOST
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.https.trust_files import (
    UntrustedFile,
    check_trust_file,
    trusted_owners,
)
from safeport.action_gateway.executors.interface import ActionError
from safeport.shared.schemas.config import HttpOperation, HttpService
from safeport.vault.secrets import SecretBytes, TokenSecret
from tests.action_gateway.executors.hostile_tls import json_response, running_hostile_server
from tests.action_gateway.executors.planned import PlannedHttp, PreparingExecutor
from tests.conftest import need

HUMAN = 65534  # the served human whose shell the agent has
ROOT_ONLY = frozenset({0})
CANARY = "CANARY-token-ca-swap-51d2"


@pytest.fixture
def base() -> Iterator[Path]:
    need(os.geteuid() == 0, "files of another owner need the tests to run as root")
    folder = Path(tempfile.mkdtemp(prefix="sp-trust-"))  # root's, 0700, in sticky /tmp
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _pem(path: Path, owner: int = 0) -> Path:
    path.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    os.chown(path, owner, owner)
    path.chmod(0o644)
    return path


def test_the_humans_own_files_and_folders_never_decide_trust(base: Path) -> None:
    home = base / "home"
    home.mkdir()
    os.chown(home, HUMAN, HUMAN)
    in_home = _pem(home / "ca.pem")  # root's file, but the human may replace it
    owned = _pem(base / "owned.pem", owner=HUMAN)
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # world-writable without the sticky bit
    in_shared = _pem(shared / "ca.pem")
    grouped = base / "grouped"
    grouped.mkdir()
    os.chown(grouped, 0, 4242)
    grouped.chmod(0o775)
    in_group = _pem(grouped / "ca.pem")
    link = base / "link.pem"
    link.symlink_to(owned)  # a root link to the human's file
    human_link = home / "link.pem"
    human_link.symlink_to(_pem(base / "root.pem"))
    for path in (in_home, owned, in_shared, in_group, link, human_link, base / "missing.pem"):
        with pytest.raises(UntrustedFile):
            check_trust_file(str(path), ROOT_ONLY)
    with pytest.raises(UntrustedFile):
        check_trust_file("ca.pem", ROOT_ONLY)


def test_root_owned_files_and_sticky_folders_are_trusted(base: Path) -> None:
    sticky = base / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    ca = _pem(sticky / "ca.pem")
    link = base / "current.pem"
    link.symlink_to("tmp/ca.pem")
    for path in (ca, link, base / "tmp" / ".." / "tmp" / "ca.pem"):
        check_trust_file(str(path), ROOT_ONLY)
    if Path("/etc/ssl/certs/ca-certificates.crt").exists():
        check_trust_file("/etc/ssl/certs/ca-certificates.crt", ROOT_ONLY)
    # In dedicated mode the gateway's own account may hold the CA too.
    account = _pem(base / "account.pem", owner=4343)
    check_trust_file(str(account), trusted_owners(frozenset({HUMAN}), own_uid=4343))


def test_the_gateway_trusts_its_own_uid_only_when_it_is_not_a_served_human() -> None:
    assert trusted_owners(frozenset({1000}), own_uid=1000) == ROOT_ONLY  # same-user mode
    assert trusted_owners(frozenset({1000, 1001}), own_uid=990) == frozenset({0, 990})


def _service(port: int, ca_file: Path) -> HttpService:
    return HttpService.model_validate(
        {
            "base_url": f"https://{API_HOST}:{port}",
            "credential": "deploy-token",
            "ca_file": str(ca_file),
            "allow_private_addresses": True,
            "timeout_s": 5,
        }
    )


def _status(service: HttpService) -> PlannedHttp:
    operation = HttpOperation.model_validate({"method": "GET", "path": "/v1/status"})
    return PlannedHttp("deploy-api", service, "op", operation, {})


def _answer(conn: socket.socket, head: bytes) -> None:
    conn.sendall(json_response(b'{"state": "running"}'))


def test_a_ca_swapped_in_by_the_human_never_receives_the_token(base: Path) -> None:
    # The agent, with the human's shell, writes its own CA where the accepted policy's ca_file
    # points (the human's home) and listens on the service's address.
    home = base / "home"
    home.mkdir()
    os.chown(home, HUMAN, HUMAN)
    executor = PreparingExecutor(
        GatewayExecutor(resolver=lambda host, port: ["127.0.0.1"], served_uids=frozenset({HUMAN}))
    )
    token = TokenSecret(SecretBytes(CANARY.encode()))
    try:
        with running_hostile_server() as attacker:
            attacker.behaviour = _answer
            swapped = home / "ca.pem"
            shutil.copy(attacker.ca_file, swapped)
            os.chown(swapped, HUMAN, HUMAN)
            with pytest.raises(ActionError, match=r"ca_file .* is not a file only root") as refused:
                executor.http_request(_status(_service(attacker.port, swapped)), token)
            assert refused.value.failure == "tls_failed"
            # What the check saw (owner, mode) stays in the gateway's log, not in the answer.
            assert f"uid {HUMAN}" not in refused.value.diagnostic()
            assert attacker.requests == []  # not even a connection reached it
            # The same CA where only root can change it is the human's own choice, and works.
            kept = base / "ca.pem"
            shutil.copy(attacker.ca_file, kept)
            result = executor.http_request(_status(_service(attacker.port, kept)), token)
            assert result.status == 200 and len(attacker.requests) == 1
    finally:
        executor.close_all()


def test_a_ca_in_the_policy_text_is_trusted_and_no_other_is(base: Path) -> None:
    # `ca_pem` puts the CA into the text the human accepts: there is no file left to swap.
    executor = PreparingExecutor(GatewayExecutor(resolver=lambda host, port: ["127.0.0.1"]))
    token = TokenSecret(SecretBytes(CANARY.encode()))
    try:
        with running_hostile_server() as server, running_hostile_server() as attacker:
            server.behaviour = attacker.behaviour = _answer

            def inline(port: int, ca: Path) -> HttpService:
                spec = _service(port, ca).model_dump(exclude={"ca_file"})
                return HttpService.model_validate({**spec, "ca_pem": ca.read_text()})

            result = executor.http_request(_status(inline(server.port, server.ca_file)), token)
            assert result.status == 200
            with pytest.raises(ActionError) as refused:
                executor.http_request(_status(inline(attacker.port, server.ca_file)), token)
            assert refused.value.failure == "tls_failed"
            assert all(CANARY.encode() not in head for head in attacker.requests)
    finally:
        executor.close_all()


def test_a_service_names_its_ca_once() -> None:
    spec = {"base_url": "https://api.example", "credential": "deploy-token"}
    with pytest.raises(ValueError, match="not both"):
        HttpService.model_validate({**spec, "ca_file": "/etc/ca.pem", "ca_pem": "x"})
    with pytest.raises(ValueError, match="PEM certificates"):
        HttpService.model_validate({**spec, "ca_pem": "not a certificate"})
