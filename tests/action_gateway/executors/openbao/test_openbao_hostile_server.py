"""An OpenBao address that answers like a hostile proxy or a misconfigured standby would.

The gateway's login carries the AppRole secret id in its body and every later request its token
in a header; neither may go anywhere but the declared address. Beside each attack, the same
client against the real server.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography.hazmat.primitives.serialization import (
    SSHCertificate,
    load_ssh_public_identity,
)

from harness.real_openbao import SSH_ROLE, OpenBao
from harness.real_sshd import ensure_user as ssh_user
from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.openbao.client import ServerSession
from safeport.action_gateway.executors.openbao.issue import sign_ssh_key
from safeport.shared.schemas.config import Credential
from safeport.shared.schemas.config_sources import OpenBaoServer
from safeport.vault.secrets import SecretBytes, SshKeySecret, TokenSecret

pytestmark = pytest.mark.integration

SECRET_ID = "secret-id-canary-7f3a9c"


def server(address: str, ca_file: Path, role_id: str = "role") -> OpenBaoServer:
    return OpenBaoServer.model_validate(
        {"address": address, "ca_file": str(ca_file), "timeout_s": 3,
         "auth": {"method": "approle", "role_id": role_id, "secret_id_credential": "sid"}}
    )  # fmt: skip


class Sink:
    """A plain-HTTP listener that records whatever reaches it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(5)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            try:
                while chunk := conn.recv(65536):
                    self.received += chunk
                    if b"\r\n\r\n" in self.received and b"secret_id" in self.received:
                        break
            except OSError:
                pass
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")


@contextmanager
def hostile(tmp_path: Path, status: int, headers: dict[str, str], body: bytes) -> Iterator[str]:
    """An HTTPS server with a certificate from the pinned CA (``tmp_path/ca.pem``) that answers
    every request the same way."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def do_PUT(self) -> None:
            self._answer()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@pytest.fixture
def redirecting(tmp_path: Path) -> Iterator[tuple[str, Path, Sink]]:
    """A server that answers every request with a 307 to a plain-HTTP listener elsewhere."""
    sink = Sink()
    location = {"Location": f"http://127.0.0.1:{sink.port}/v1/auth/approle/login"}
    try:
        with hostile(tmp_path, 307, location, b"") as address:
            yield address, tmp_path / "ca.pem", sink
    finally:
        sink.sock.close()


def secret_id_reader(value: str = SECRET_ID) -> Any:
    return lambda name: TokenSecret(SecretBytes(value.encode()))


def test_a_redirect_carries_neither_the_secret_id_nor_the_token_elsewhere(
    redirecting: tuple[str, Path, Sink],
) -> None:
    address, ca_file, sink = redirecting
    session = ServerSession("team", server(address, ca_file), frozenset({0}))
    with pytest.raises(ActionError) as refused:
        session.logged_in(secret_id_reader())
    sink.thread.join(timeout=3)
    assert SECRET_ID.encode() not in sink.received
    assert sink.received == b""
    assert refused.value.failure == "source_unreachable"
    assert "redirect" in refused.value.message
    assert SECRET_ID not in str(refused.value) and "127.0.0.1" not in refused.value.message


def test_the_same_client_logs_in_at_the_real_server(openbao: OpenBao) -> None:
    declared = server(openbao.address, openbao.ca_file, openbao.role_id)
    session = ServerSession("team", declared, frozenset({0}))
    client = session.logged_in(secret_id_reader(openbao.new_secret_id()))
    assert client.auth.token.lookup_self()["data"]["display_name"] == "approle"


NO_LOGIN = [b"{}", b'{"auth": null}', b"[1]", b'{"auth": {"lease_duration": "x"}}']


@pytest.mark.parametrize("body", NO_LOGIN)
def test_an_answer_that_is_no_login_is_refused(tmp_path: Path, body: bytes) -> None:
    headers = {"Content-Type": "application/json"}
    with hostile(tmp_path, 200, headers, body) as address:
        session = ServerSession("team", server(address, tmp_path / "ca.pem"), frozenset({0}))
        with pytest.raises(ActionError) as refused:
            session.logged_in(secret_id_reader())
    assert refused.value.failure == "source_refused"


def token_server(token_file: Path) -> OpenBaoServer:
    return OpenBaoServer.model_validate(
        {"address": "https://127.0.0.1:1", "ca_file": "/etc/ssl/certs/ca-certificates.crt",
         "auth": {"method": "token-file", "token_file": str(token_file)}}
    )  # fmt: skip


def test_a_token_file_swapped_for_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    # A FIFO with the right owner and mode would block the open until someone writes to it,
    # holding the server's lock: every later action on the server would wait forever.
    fifo = tmp_path / "bao-token"
    os.mkfifo(fifo, 0o600)
    session = ServerSession("team", token_server(fifo), frozenset({0}))
    outcome: list[BaseException] = []

    def login() -> None:
        try:
            session.logged_in(secret_id_reader())
        except ActionError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=login, daemon=True)
    thread.start()
    thread.join(timeout=60)  # a wait on the FIFO never ends; a slow machine's refusal does
    if thread.is_alive():  # unblock the open so the thread ends (a writer that never waits)
        with suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert not thread.is_alive() or outcome, "the login waited on a FIFO"
    thread.join(timeout=60)
    assert outcome and isinstance(outcome[0], ActionError)
    assert outcome[0].failure == "source_auth"
    assert "not a regular file" in outcome[0].message


def test_a_private_regular_token_file_is_read(tmp_path: Path, openbao: OpenBao) -> None:
    token_file = tmp_path / "bao-token"
    token_file.write_text(openbao.root_token + "\n")
    token_file.chmod(0o600)
    declared = token_server(token_file).model_copy(
        update={"address": openbao.address, "ca_file": str(openbao.ca_file)}
    )
    client = ServerSession("team", declared, frozenset({0})).logged_in(secret_id_reader())
    assert client.auth.token.lookup_self()["data"]["id"] == openbao.root_token


def ssh_credential(role: str, ttl_s: int = 60) -> Credential:
    return Credential.model_validate(
        {"kind": "ssh-key", "source": "team", "ssh_role": role, "ttl_s": ttl_s}
    )


def test_a_certificate_forcing_another_command_is_refused(openbao: OpenBao) -> None:
    # A role whose defaults add a force-command (or a source-address) would make the host run
    # something other than the approved command, and report its output as the action's.
    root = openbao.root()
    root.write_data(
        "ssh/roles/forced",
        data={"key_type": "ca", "allow_user_certificates": True, "allowed_users": "*",
              "ttl": "60s", "max_ttl": "120s",
              "default_critical_options": {"force-command": "/usr/bin/id"}},
    )  # fmt: skip
    with pytest.raises(ActionError) as refused:
        sign_ssh_key("team", root, ssh_credential("forced"), "deploy")
    assert refused.value.failure == "source_refused"
    assert "force-command" in refused.value.message


def test_a_certificate_as_asked_is_used(openbao: OpenBao) -> None:
    issued = sign_ssh_key("team", openbao.root(), ssh_credential(SSH_ROLE), ssh_user())
    assert isinstance(issued.secret, SshKeySecret)
    certificate = load_ssh_public_identity(issued.secret.certificate or b"")
    assert isinstance(certificate, SSHCertificate)
    assert certificate.valid_principals == [ssh_user().encode()]
    assert certificate.valid_before - certificate.valid_after <= 60 + 30 + 5
    assert certificate.critical_options == {}


def test_a_server_dripping_its_answer_is_cut_at_timeout_s(tmp_path: Path) -> None:
    # Each byte arrives within the per-read timeout, so only a deadline on the whole request
    # ends it; without one, the proposal (and the server's lock) waits for the last byte.
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    body = b'{"auth": {"lease_duration": 3600, "client_token": "t"}}'

    def drip() -> None:
        raw, _ = listener.accept()
        with context.wrap_socket(raw, server_side=True) as conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
            for byte in body:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    threading.Thread(target=drip, daemon=True).start()
    declared = server(f"https://127.0.0.1:{listener.getsockname()[1]}", tmp_path / "ca.pem")
    declared = declared.model_copy(update={"timeout_s": 1})
    started = time.monotonic()
    with pytest.raises(ActionError) as refused:
        ServerSession("team", declared, frozenset({0})).logged_in(secret_id_reader())
    assert refused.value.failure == "source_timeout"
    assert time.monotonic() - started < 3
    listener.close()
