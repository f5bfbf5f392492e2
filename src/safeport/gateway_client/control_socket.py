"""`sp`'s side of control.sock: one connection, requests, replies and pushed events.

Nothing secret is sent before the listener is checked: in dedicated mode the peer's uid (at
connect, before any request, since even a status query would tell an impostor that a human is
at the keyboard), in same-user mode also the program behind the socket
(:mod:`safeport.gateway_client.listener_check`) before the first request that carries a
passphrase.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from safeport.errors import EnvironmentProblem, Error
from safeport.gateway_client.listener_check import check_gateway_listener
from safeport.shared.gateway_socket import check_listener, check_socket_folder
from safeport.shared.paths import SafeportPaths, check_socket_path
from safeport.shared.schemas.operations import ControlOp
from safeport.shared.schemas.replies import ReplyOk, parse_reply, parse_result
from safeport.shared.wire import PeerClosed, recv_message, send_message
from safeport.vault.secrets import SecretBytes

Result = TypeVar("Result", bound=BaseModel)


class GatewayNotRunning(Error):
    def __init__(self, path: Path, *, dedicated: bool = False) -> None:
        super().__init__(
            f"no gateway is listening on {path}",
            hint="start it with `sudo systemctl start safeport-gateway`"
            if dedicated
            else "start it with `sp gateway run`",
        )


class GatewayClosed(Error):
    """The gateway closed the connection (it stopped, restarts, or refused this one)."""

    def __init__(self) -> None:
        super().__init__("the gateway closed the connection")


class GatewayRefused(Error):
    """The gateway answered with an error."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.exit_code = 1 if code in ("denied", "locked", "timeout") else 2


def reply_result(message: dict[str, Any]) -> dict[str, Any]:
    """The result of one reply, or the gateway's error raised as :class:`GatewayRefused`; a
    message outside the protocol is a :class:`~safeport.errors.WireError`."""
    reply = parse_reply(message)
    if isinstance(reply, ReplyOk):
        return reply.result
    raise GatewayRefused(reply.error.code, reply.error.reason)


class GatewayClient:
    """One connection to control.sock, opened when the first request is sent.

    The gateway closes a connection that stays silent for a few seconds before its first
    message, so nothing is opened while a human is still typing a passphrase.
    """

    def __init__(self, paths: SafeportPaths, *, timeout: float = 30.0) -> None:
        self.paths = paths
        self.path = paths.control_socket
        self._timeout: float | None = timeout
        self._connection: socket.socket | None = None
        self._verified = False
        self._counter = 0
        self._pushed: list[dict[str, Any]] = []  # events that arrived before a reply

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    @property
    def connection(self) -> socket.socket:
        """The connection (opened on first use), for callers that wait on it with select."""
        return self._sock

    @property
    def _sock(self) -> socket.socket:
        if self._connection is None:
            check_socket_folder(self.paths)
            sock = self._connect()
            try:
                # Before any request: in dedicated mode even a status query would tell an
                # impostor that a human is at the keyboard, and its answer could mislead.
                check_listener(sock, self.paths)
            except Error:
                sock.close()
                raise
            self._connection = sock
        return self._connection

    def _connect(self) -> socket.socket:
        # A full listen backlog (a flood by some other local process) answers EAGAIN at once:
        # wait and retry for a while rather than fail the human's command.
        for attempt in range(50):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self._timeout)
            try:
                sock.connect(os.fspath(self.path))
            except BlockingIOError:
                sock.close()
                time.sleep(min(0.02 * (attempt + 1), 0.2))
                continue
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                sock.close()
                raise GatewayNotRunning(self.path, dedicated=self.paths.dedicated) from exc
            except PermissionError as exc:
                sock.close()
                install = self.paths.install
                if install is not None:
                    raise EnvironmentProblem(
                        f"{self.path} is reachable only by the group {install.account}, and this "
                        "session is not in it yet",
                        hint="log out and in again after `sp gateway install` (or run `newgrp "
                        f"{install.account}`); ask an administrator if you are not a named human",
                    ) from exc
                raise EnvironmentProblem(f"{self.path} is not accessible to you") from exc
            except OSError as exc:
                sock.close()
                check_socket_path(self.path)  # the usual cause: a path over sun_path's size
                raise EnvironmentProblem(f"cannot connect to {self.path}: {exc.strerror}") from exc
            return sock
        raise EnvironmentProblem(
            f"{self.path} is not accepting connections (its queue stays full)",
            hint="another process may be flooding it; see `sp gateway status` later",
        )

    def call(self, op: ControlOp[Any, Result], **params: Any) -> Result:
        """Send one request without secrets; return its result as the operation's model, or
        raise the gateway's error (a result that does not match the model is a
        :class:`~safeport.errors.WireError`: it is refused whole, never read in part)."""
        self._counter += 1
        request_id = f"sp-{self._counter}"
        # A refused connection is answered at once and closed, so the send can fail; the
        # gateway's reason is then already waiting to be read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            send_message(
                self._sock,
                {"v": 1, "id": request_id, "type": "control", "op": op.name, "params": params},
            )
        return parse_result(op.name, op.result, self._reply(request_id))

    def call_with_passphrase(
        self, op: ControlOp[Any, Result], passphrase: SecretBytes, **params: Any
    ) -> Result:
        """Check who listens, then send a request carrying the passphrase."""
        if not self._verified:
            if not self.paths.dedicated:
                # Same user: the uid proves nothing, so look at the program. In dedicated mode
                # the uid checked at connect is the proof (only root can take the account's).
                check_gateway_listener(self._sock)
            self._verified = True
        return self.call(op, passphrase=passphrase.reveal().decode("utf-8"), **params)

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        if self._connection is not None:
            self._connection.settimeout(timeout)

    def take_pushed(self) -> list[dict[str, Any]]:
        """The pushed events (approvals.watch) that arrived while a reply was awaited."""
        pushed, self._pushed = self._pushed, []
        return pushed

    def _reply(self, request_id: str) -> dict[str, Any]:
        pending: list[dict[str, Any]] = []
        while True:
            try:
                message = recv_message(self._sock)
            except (PeerClosed, ConnectionResetError) as exc:
                raise GatewayClosed() from exc
            except TimeoutError as exc:
                raise Error("the gateway did not answer in time") from exc
            if message.get("id") != request_id and message.get("id") is not None:
                pending.append(message)  # a pushed event; the caller reads events separately
                continue
            self._pushed.extend(pending)
            return reply_result(message)


def call_for_everyone(
    client: GatewayClient,
    op: ControlOp[Any, Result],
    passphrase: Callable[[], SecretBytes],
    **params: Any,
) -> Result:
    """``op`` as an operation on every human's work: with several humans installed the gateway
    asks for the passphrase (being one of them is not enough), so it is asked for and sent."""
    install = client.paths.install
    if install is None or len(install.humans) < 2:
        return client.call(op, **params)
    secret = passphrase()
    try:
        return client.call_with_passphrase(op, secret, **params)
    finally:
        secret.wipe()
