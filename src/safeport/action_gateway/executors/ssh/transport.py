"""Open pinned, authenticated SSH transports and run one fixed command on them.

paramiko's ``Transport`` is used directly on a socket we create, never ``SSHClient``: the client
class is where agents, ``~/.ssh/config``, key lookup and ``known_hosts`` live, and none of them may
decide anything here. The host key is compared with the pinned keys right after the key exchange
and before a single authentication byte is sent, so a server that is not the pinned one never
sees a signature made with the gateway's key. No pty, no environment, no forwarding of any kind
is ever requested. Every paramiko, socket and cryptography exception is translated into an
:class:`ActionError` in :func:`translate_ssh_errors`, once.
"""

from __future__ import annotations

import base64
import hashlib
import io
import ipaddress
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

import paramiko
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from paramiko.ssh_exception import IncompatiblePeer

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.deadline import within
from safeport.action_gateway.executors.ssh.stop import (
    KILL_GRACE_S,
    ended_within,
    stop_remote_command,
)
from safeport.shared.schemas.config import SshHost
from safeport.shared.schemas.wire import SshExecResult
from safeport.vault.secrets import SshKeySecret

# paramiko logs a traceback for every failed negotiation; with no handler configured, Python
# would print them on stderr. Our errors already say what happened, once.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

KEEPALIVE_S = 30
_READ_CHUNK = 32768
# After a stream passes its cap we keep draining (and discarding) for a while so the exit status
# can still arrive; a command that keeps talking past this budget is stopped instead.
_DISCARD_FACTOR = 16
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*$")
# A pinned `ssh-rsa` key may be offered under either SHA-2 signature algorithm.
_HOST_KEY_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}


class StaleTransport(Exception):
    """A pooled transport died before the command was sent; a fresh one may be tried once."""


@dataclass(frozen=True)
class PinnedKey:
    key_type: str
    blob: bytes

    @property
    def fingerprint(self) -> str:
        return sha256_fingerprint(self.blob)


def sha256_fingerprint(blob: bytes) -> str:
    """OpenSSH's ``SHA256:…`` form (unpadded base64 of the SHA-256 of the key blob)."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


def parse_pinned_keys(host_keys: list[str]) -> list[PinnedKey]:
    """Parse ``'<type> <base64> [comment]'`` lines; the blob must name the same type."""
    pinned = []
    for line in host_keys:
        parts = line.split()
        try:
            blob = base64.b64decode(parts[1], validate=True)
        except (IndexError, ValueError):
            raise ActionError("invalid_target", "a pinned host key is not valid base64") from None
        if _blob_type(blob) != parts[0]:
            raise ActionError("invalid_target", "a pinned host key's type does not match its data")
        pinned.append(PinnedKey(parts[0], blob))
    return pinned


@contextmanager
def translate_ssh_errors(host_id: str) -> Iterator[None]:
    """The one place paramiko, socket and crypto exceptions become :class:`ActionError`."""
    try:
        yield
    except (ActionError, StaleTransport):
        raise
    except paramiko.BadAuthenticationType as exc:
        raise ActionError(
            "auth_failed", f"ssh host {host_id!r} does not accept public-key authentication"
        ) from exc
    except paramiko.AuthenticationException as exc:
        raise ActionError(
            "auth_failed", f"ssh host {host_id!r} refused the credential's key"
        ) from exc
    except TimeoutError as exc:
        raise ActionError(
            "unreachable", f"ssh host {host_id!r} did not answer in time", hint="check the address"
        ) from exc
    except (paramiko.SSHException, EOFError) as exc:
        raise ActionError("unreachable", f"the ssh session with {host_id!r} failed") from exc
    except OSError as exc:
        raise ActionError(
            "unreachable", f"ssh host {host_id!r} is unreachable ({_os_reason(exc)})"
        ) from exc


def open_transport(host_id: str, host: SshHost, secret: SshKeySecret) -> paramiko.Transport:
    """Connect, verify the host key against the pins, then authenticate; never anything else."""
    pinned = parse_pinned_keys(host.host_keys)
    sock = _connect_socket(host_id, host)
    transport = paramiko.Transport(sock)
    try:
        with translate_ssh_errors(host_id):
            transport.banner_timeout = _connect_within(host_id, host)
            transport.auth_timeout = transport.banner_timeout
            options = transport.get_security_options()
            # Offer only the pinned key types, so a server with several keys presents the one
            # we can check instead of whichever paramiko would prefer.
            supported = set(options.key_types)
            wanted = [
                a for k in pinned for a in _HOST_KEY_ALGORITHMS.get(k.key_type, (k.key_type,))
            ]
            offered = tuple(dict.fromkeys(a for a in wanted if a in supported))
            if not offered:
                raise ActionError(
                    "invalid_target", f"ssh host {host_id!r} pins only key types paramiko lacks"
                )
            options.key_types = offered
            try:
                transport.start_client(timeout=_connect_within(host_id, host))
            except IncompatiblePeer as exc:
                if "host key" not in str(exc):
                    raise  # a cipher or kex mismatch: the session failed, nothing to do with pins
                raise ActionError(
                    "host_key_mismatch",
                    f"ssh host {host_id!r} offers none of the pinned host key types",
                    hint="check the server with `sp ssh scan` before changing the pin",
                ) from exc
            verify_host_key(host_id, transport.get_remote_server_key(), pinned)
            key = load_private_key(secret)
            transport.auth_timeout = _connect_within(host_id, host)
            transport.auth_publickey(host.user, key)
            if not transport.is_authenticated():
                raise ActionError(
                    "auth_failed", f"ssh host {host_id!r} refused the credential's key"
                )
            transport.set_keepalive(KEEPALIVE_S)
    except BaseException:
        transport.close()
        raise
    return transport


def verify_host_key(host_id: str, offered: paramiko.PKey, pinned: list[PinnedKey]) -> None:
    """Raise ``host_key_mismatch`` unless the offered key is one of the pinned keys (by blob)."""
    blob = offered.asbytes()
    if any(blob == key.blob for key in pinned):
        return
    raise ActionError(
        "host_key_mismatch",
        f"ssh host {host_id!r} presented a host key that is not pinned "
        f"({offered.get_name()} {sha256_fingerprint(blob)}); the connection was dropped "
        "before authentication",
        hint="if the server's key really changed, check it out of band and update host_keys",
    )


def load_private_key(secret: SshKeySecret) -> paramiko.PKey:
    """The credential's key as a paramiko key. Errors never carry the key's bytes."""
    data = secret.private_key.reveal()
    password = secret.passphrase.reveal() if secret.passphrase is not None else None
    try:
        loaded: object
        try:
            loaded = serialization.load_ssh_private_key(data, password)
        except ValueError:
            loaded = serialization.load_pem_private_key(data, password)
        key_class: type[paramiko.PKey]
        if isinstance(loaded, rsa.RSAPrivateKey):
            key_class = paramiko.RSAKey
        elif isinstance(loaded, ed25519.Ed25519PrivateKey):
            key_class = paramiko.Ed25519Key
        elif isinstance(loaded, ec.EllipticCurvePrivateKey):
            key_class = paramiko.ECDSAKey
        else:
            raise ValueError("unsupported key type")
        text = io.StringIO(data.decode("ascii"))
        key = key_class.from_private_key(
            text, password=password.decode("utf-8") if password is not None else None
        )
        if secret.certificate is not None:
            key.load_certificate(secret.certificate.decode("ascii"))
        return key
    except (ValueError, TypeError, UnicodeError, UnsupportedAlgorithm, paramiko.SSHException):
        # `from None`: some of these exceptions keep the key bytes as attributes.
        raise ActionError(
            "auth_failed",
            "the credential is not a usable SSH private key",
            hint="store an OpenSSH or PEM private key (and its passphrase) in the vault",
        ) from None


@dataclass
class _CappedStream:
    cap: int
    kept: bytearray = field(default_factory=bytearray)
    discarded: int = 0

    def feed(self, data: bytes) -> None:
        room = self.cap - len(self.kept)
        self.kept += data[:room]
        self.discarded += max(0, len(data) - room)

    @property
    def truncated(self) -> bool:
        return self.discarded > 0


def run_command(
    host_id: str, transport: paramiko.Transport, command: str, timeout_s: float, cap: int
) -> SshExecResult:
    """Run ``command`` in a new session channel; output capped, the whole call bounded in time."""
    started = time.monotonic()
    deadline = started + within(timeout_s)  # what connecting left of the action's deadline
    if deadline <= started:
        raise ActionError("timeout", f"ssh host {host_id!r} was not ready in time")
    try:
        channel = transport.open_session(timeout=min(deadline - started, 10))
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise StaleTransport from exc
    with translate_ssh_errors(host_id):
        try:
            _exec_before(host_id, channel, command, deadline)
            stdout, stderr = _CappedStream(cap), _CappedStream(cap)
            exit_status = _pump(host_id, channel, stdout, stderr, deadline, cap)
        finally:
            channel.close()
    out, out_replaced = _decode(stdout.kept)
    err, err_replaced = _decode(stderr.kept)
    return SshExecResult(
        exit_status=exit_status,
        stdout=out,
        stderr=err,
        stdout_truncated=stdout.truncated,
        stderr_truncated=stderr.truncated,
        output_replaced=out_replaced or err_replaced,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _exec_before(host_id: str, channel: paramiko.Channel, command: str, deadline: float) -> None:
    """Send the exec request (no pty, no environment); give up on its answer at the deadline.

    paramiko waits for the server's reply to an exec request with no timeout at all, so a
    server that never answers would hold the worker forever; closing the channel from a timer
    is the one public way to end that wait.
    """
    cut = threading.Event()

    def cut_off() -> None:
        cut.set()
        # The channel counts as closed (and the wait ends) before the close message is sent;
        # a transport too stuck to send it is not this thread's to report.
        with suppress(paramiko.SSHException, EOFError, OSError):
            channel.close()

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), cut_off)
    timer.daemon = True
    timer.start()
    try:
        channel.exec_command(command)  # no get_pty(), no set_environment_variable()
    except (paramiko.SSHException, EOFError) as exc:
        if cut.is_set():
            raise ActionError(
                "timeout", f"ssh host {host_id!r} did not accept the command in time"
            ) from exc
        raise
    finally:
        timer.cancel()


def _pump(
    host_id: str,
    channel: paramiko.Channel,
    stdout: _CappedStream,
    stderr: _CappedStream,
    deadline: float,
    cap: int,
) -> int | None:
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            stop_remote_command(channel)
            raise ActionError(
                "timeout",
                f"the command on {host_id!r} did not finish in time; it was stopped",
                stopped_by="cancel" if ended_within(channel, KILL_GRACE_S) else "close",
            )
        # The channel's fileno is a pipe paramiko sets when stdout or stderr has data or the
        # channel reached EOF, so one select waits on both streams without stalling either.
        select.select([channel], [], [], min(remaining, 1.0))
        while channel.recv_ready():
            stdout.feed(channel.recv(_READ_CHUNK))
        while channel.recv_stderr_ready():
            stderr.feed(channel.recv_stderr(_READ_CHUNK))
        if stdout.discarded + stderr.discarded > _DISCARD_FACTOR * cap:
            stop_remote_command(channel)
            return None  # still talking far past the cap: stopped, so no exit status
        drained = not channel.recv_ready() and not channel.recv_stderr_ready()
        if channel.eof_received and drained:
            break
        if channel.closed and drained:
            raise ActionError(
                "unreachable",
                f"the ssh connection to {host_id!r} dropped while the command ran; "
                "it may or may not have completed",
            )
    # The exit status travels after the data; wait for it within what is left of the deadline.
    channel.status_event.wait(max(0.0, deadline - time.monotonic()))
    if not channel.exit_status_ready():
        return None
    status = channel.recv_exit_status()
    return None if status < 0 else status


def _decode(data: bytes | bytearray) -> tuple[str, bool]:
    try:
        return bytes(data).decode("utf-8"), False
    except UnicodeDecodeError:
        return bytes(data).decode("utf-8", errors="replace"), True


def _connect_socket(host_id: str, host: SshHost) -> socket.socket:
    address = host.address
    if not is_plain_address(address):
        # The address is only ever a socket address, but refuse anything that is not a plain
        # name or IP (`-oProxyCommand=…`, spaces, `user@`), so no reader can mistake it.
        raise ActionError(
            "invalid_target", f"ssh host {host_id!r} has an address that is not plain"
        )
    with translate_ssh_errors(host_id):
        sock = socket.create_connection(
            (address, host.port), timeout=_connect_within(host_id, host)
        )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return sock


def _connect_within(host_id: str, host: SshHost) -> float:
    """Seconds for the next step of connecting: ``connect_timeout_s``, or what is left of the
    action's deadline (ssh/deadline.py) when that is sooner."""
    seconds = within(host.connect_timeout_s)
    if seconds <= 0:
        raise ActionError("timeout", f"ssh host {host_id!r} was not ready in time")
    return seconds


def is_plain_address(address: str) -> bool:
    """An IP address or a DNS name, nothing an option parser could read as a flag."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return bool(_HOSTNAME.match(address))
    return True


def _blob_type(blob: bytes) -> str | None:
    if len(blob) < 4:
        return None
    length = int.from_bytes(blob[:4], "big")
    name = blob[4 : 4 + length]
    if len(name) != length:
        return None
    try:
        return name.decode("ascii")
    except UnicodeDecodeError:
        return None


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "the name does not resolve"
    return exc.strerror or type(exc).__name__
