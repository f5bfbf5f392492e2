"""`sp`'s side of control.sock, and the check of who listens there before a secret is sent.

An agent running as the same user could stop the gateway and listen on control.sock itself,
waiting for the next `sp vault unlock` to hand it the passphrase. So before any secret leaves
`sp`, the peer behind the socket must be an `sp gateway run` of this same installation, running
as this user, not traced, and without LD_PRELOAD or PYTHON* in its environment
(DESIGN.md §8). Reading another process's environment needs it to be dumpable; the real gateway
is not (it hardens itself), so where the environment cannot be read the check rests on the
gateway's own refusal to start with those variables, and says so in SECURITY notes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeport.action_gateway.daemon import tainted_environment
from safeport.errors import EnvironmentProblem, Error, UsageError
from safeport.shared.gateway_socket import ImpostorGateway, check_listener, check_socket_folder
from safeport.shared.paths import SafeportPaths, check_socket_path
from safeport.shared.wire import PeerClosed, recv_message, send_message
from safeport.vault.secrets import SecretBytes

_UCRED = struct.Struct("3i")


class GatewayNotRunning(Error):
    def __init__(self, path: Path, *, dedicated: bool = False) -> None:
        super().__init__(
            f"no gateway is listening on {path}",
            hint="start it with `sudo systemctl start safeport-gateway`"
            if dedicated
            else "start it with `sp gateway run`",
        )


class GatewayRefused(Error):
    """The gateway answered with an error."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.exit_code = 1 if code in ("denied", "locked", "timeout") else 2


@dataclass(frozen=True)
class Installation:
    """What an `sp gateway run` of this installation looks like in /proc/PID/cmdline."""

    python: str
    sp_script: str | None

    @classmethod
    def current(cls) -> Installation:
        script = Path(sys.prefix) / "bin" / "sp"
        return cls(python=sys.executable, sp_script=str(script) if script.exists() else None)


def judge_gateway_process(
    argv: Sequence[str],
    environ: Mapping[str, str] | None,
    tracer_pid: int,
    installation: Installation,
) -> None:
    """Raise :class:`ImpostorGateway` unless the facts describe this installation's gateway."""
    if not _is_sp_gateway_run(argv, installation):
        raise ImpostorGateway(
            "the process behind control.sock is not `sp gateway run` of this installation; "
            "the passphrase was not sent",
            hint="stop it, start the gateway with `sp gateway run`, and retry",
        )
    if tracer_pid != 0:
        raise ImpostorGateway("the gateway process is being traced; the passphrase was not sent")
    if environ is not None:
        tainted = tainted_environment(environ)
        if tainted:
            raise ImpostorGateway(
                f"the gateway runs with {', '.join(tainted)} set; the passphrase was not sent",
                hint="restart it from a clean environment",
            )


def _is_sp_gateway_run(argv: Sequence[str], installation: Installation) -> bool:
    """`sp gateway run` as a shell starts it (`python …/bin/sp gateway run`, optionally with
    `-I`), or as safeport writes it (`python -I -m safeport gateway run`). A bare
    `python -m safeport` is refused: it imports from its working folder, so any folder holding
    a `safeport/` package could stand behind the socket with the genuine command line."""
    if not argv or not _same_python(argv[0], installation.python):
        return False
    rest = list(argv[1:])
    isolated = bool(rest) and rest[0] == "-I"
    if isolated:
        rest = rest[1:]
    script = installation.sp_script
    if len(rest) >= 3 and script is not None and rest[1:3] == ["gateway", "run"]:
        return _same_file(rest[0], script)
    return isolated and rest[:4] == ["-m", "safeport", "gateway", "run"]


def _same_python(candidate: str, python: str) -> bool:
    """The same interpreter of the same environment: `python` and `python3` in one venv's bin
    folder are the same, but two venvs (both links to one base interpreter) are not."""
    first, second = Path(candidate), Path(python)
    if not first.is_absolute():
        return False
    if os.path.normpath(first) == os.path.normpath(second):
        return True
    return os.path.normpath(first.parent) == os.path.normpath(second.parent) and _same_file(
        str(first), str(second)
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def inspect_peer(sock: socket.socket, proc: Path = Path("/proc")) -> None:
    """Check the process behind a connected control socket (Linux; elsewhere uid only)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - macOS checks uid via getpeereid
        return
    pid, uid, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    if uid != os.geteuid():
        raise ImpostorGateway("control.sock is served by another user; the passphrase was not sent")
    base = proc / str(pid)
    try:
        argv = [
            p.decode("utf-8", "replace") for p in (base / "cmdline").read_bytes().split(b"\0") if p
        ]
        status = (base / "status").read_text()
    except OSError as exc:
        raise ImpostorGateway("the process behind control.sock could not be inspected") from exc
    tracer = next(
        (int(line.split()[1]) for line in status.splitlines() if line.startswith("TracerPid:")), 0
    )
    environ: dict[str, str] | None
    try:
        raw = (base / "environ").read_bytes()
        environ = dict(
            part.decode("utf-8", "replace").partition("=")[::2] for part in raw.split(b"\0") if part
        )
    except PermissionError:
        environ = None  # a non-dumpable gateway hides it (see the module docstring)
    judge_gateway_process(argv, environ, tracer, Installation.current())


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
        self.backlog: list[dict[str, Any]] = []  # pushed events that arrived before a reply

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

    def call(self, op: str, **params: Any) -> dict[str, Any]:
        """Send one request without secrets; return its result or raise the gateway's error."""
        self._counter += 1
        request_id = f"sp-{self._counter}"
        # A refused connection is answered at once and closed, so the send can fail; the
        # gateway's reason is then already waiting to be read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            send_message(
                self._sock,
                {"v": 1, "id": request_id, "type": "control", "op": op, "params": params},
            )
        return self._reply(request_id)

    def call_with_passphrase(
        self, op: str, passphrase: SecretBytes, **params: Any
    ) -> dict[str, Any]:
        """Check who listens, then send a request carrying the passphrase."""
        if not self._verified:
            if not self.paths.dedicated:
                # Same user: the uid proves nothing, so look at the program. In dedicated mode
                # the uid checked at connect is the proof (only root can take the account's).
                inspect_peer(self._sock)
            self._verified = True
        return self.call(op, passphrase=passphrase.reveal().decode("utf-8"), **params)

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        if self._connection is not None:
            self._connection.settimeout(timeout)

    def events(self) -> Iterator[dict[str, Any]]:
        """Messages pushed by the gateway (approvals.watch), until it closes."""
        while True:
            try:
                yield recv_message(self._sock)
            except PeerClosed:
                return

    def _reply(self, request_id: str) -> dict[str, Any]:
        pending: list[dict[str, Any]] = []
        while True:
            try:
                message = recv_message(self._sock)
            except (PeerClosed, ConnectionResetError) as exc:
                raise Error("the gateway closed the connection") from exc
            except TimeoutError as exc:
                raise Error("the gateway did not answer in time") from exc
            if message.get("id") != request_id and message.get("id") is not None:
                pending.append(message)  # a pushed event; the caller reads events separately
                continue
            self.backlog.extend(pending)
            if message.get("ok"):
                result = message.get("result")
                return result if isinstance(result, dict) else {}
            error = message.get("error") or {}
            raise GatewayRefused(str(error.get("code", "internal")), str(error.get("reason", "")))


def call_for_everyone(
    client: GatewayClient, op: str, passphrase_file: Path | None, **params: Any
) -> dict[str, Any]:
    """``op`` as an operation on every human's work: with several humans installed the gateway
    asks for the passphrase (being one of them is not enough), so it is read and sent."""
    install = client.paths.install
    if install is None or len(install.humans) < 2:
        return client.call(op, **params)
    secret = read_passphrase(passphrase_file)
    try:
        return client.call_with_passphrase(op, secret, **params)
    finally:
        secret.wipe()


def read_passphrase(
    passphrase_file: Path | None, *, prompt: str = "Vault passphrase"
) -> SecretBytes:
    """From a file (``-`` = stdin) or a TTY prompt; never argv or the environment."""
    import click

    if passphrase_file is not None:
        try:
            raw = (
                sys.stdin.buffer.readline()
                if str(passphrase_file) == "-"
                else passphrase_file.read_bytes()
            )
        except OSError as exc:
            raise UsageError(f"cannot read {passphrase_file}: {exc.strerror}") from exc
        value = raw.splitlines()[0] if raw.strip() else b""
        if not value:
            raise UsageError("the passphrase file is empty")
        return SecretBytes(value)
    if not sys.stdin.isatty():
        raise UsageError("no TTY to ask for the passphrase", hint="use --passphrase-file FILE")
    return SecretBytes(click.prompt(prompt, hide_input=True).encode("utf-8"))


@dataclass(frozen=True)
class GatewayView:
    """What a running gateway says about its vault and policy, asked without a secret."""

    running: bool
    vault_kinds: dict[str, str] | None  # entry name → kind; None when it could not be asked
    vault_note: str  # why the vault's entries are unknown, when they are
    served_digest: str | None
    served_text: str | None


def gateway_view(paths: SafeportPaths, *, timeout: float = 5.0) -> GatewayView:
    try:
        with GatewayClient(paths, timeout=timeout) as client:
            status = client.call("policy.status")
            served = status.get("served")
            served_text = status.get("served_text")
            try:
                entries = client.call("vault.entries").get("entries", [])
            except GatewayRefused as exc:
                return GatewayView(
                    True,
                    None,
                    f"the vault is locked ({exc.diagnostic()}); run `sp vault unlock` to check "
                    "the credentials too",
                    served if isinstance(served, str) else None,
                    served_text if isinstance(served_text, str) else None,
                )
    except Error:
        return GatewayView(
            False,
            None,
            "no gateway is running, so the credentials were not checked against the vault",
            None,
            None,
        )
    kinds = {str(e.get("name")): str(e.get("kind")) for e in entries if isinstance(e, dict)}
    return GatewayView(
        True,
        kinds,
        "",
        served if isinstance(served, str) else None,
        served_text if isinstance(served_text, str) else None,
    )
