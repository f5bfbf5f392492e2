"""Open pinned, authenticated SSH transports (one fixed command runs on them: command_channel.py).

paramiko's ``Transport`` is used directly on a socket we create, never ``SSHClient``: the client
class is where agents, ``~/.ssh/config``, key lookup and ``known_hosts`` live, and none of them may
decide anything here. The host key is compared with the pinned keys (host_keys.py) right after
the key exchange and before a single authentication byte is sent, so a server that is not the
pinned one never sees a signature made with the gateway's key. No pty, no environment, no
forwarding of any kind is ever requested. Every paramiko, socket and cryptography exception is
translated into an :class:`ActionError` in :func:`translate_ssh_errors`, once.
"""

from __future__ import annotations

import io
import ipaddress
import logging
import re
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from paramiko.ssh_exception import IncompatiblePeer

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.deadline import within
from safeport.action_gateway.executors.ssh.host_keys import (
    offered_key_types,
    parse_pinned_keys,
    verify_host_key,
)
from safeport.shared.schemas.config import SshHost
from safeport.vault.secrets import SshKeySecret

# paramiko logs a traceback for every failed negotiation; with no handler configured, Python
# would print them on stderr. Our errors already say what happened, once.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

KEEPALIVE_S = 30
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*$")


class StaleTransport(Exception):
    """A pooled transport died before the command was sent; a fresh one may be tried once."""


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
            offered = offered_key_types(pinned, set(options.key_types))
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


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return "the name does not resolve"
    return exc.strerror or type(exc).__name__
