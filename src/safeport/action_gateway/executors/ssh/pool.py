"""Authenticated SSH transports kept per host, so a repeated command costs one round trip.

A transport is reused only for the exact same target: host id, address, port, user, pinned keys and
credential (the credential is identified by a keyed hash with a per-process random key, so the pool
holds no copy of it and a rotated key gets a new connection). Every new connection goes through
:func:`~safeport.action_gateway.executors.ssh.transport.open_transport` and so re-checks the host
key; a pooled one is reused only while the key it holds is still pinned, because paramiko accepts
whatever key the server signs a later key re-exchange with (OpenSSH refuses a change). A transport
found dead before a command was sent is replaced once; a command is never sent twice. One whose
command outlived its deadline and the KILL signal is closed and dropped.
:meth:`SshPool.close_all` drops everything (vault lock, gateway stop).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable
from typing import TypeVar

import paramiko

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.host_keys import parse_pinned_keys
from safeport.action_gateway.executors.ssh.transport import StaleTransport, open_transport
from safeport.shared.schemas.config import SshHost
from safeport.vault.secrets import SshKeySecret

T = TypeVar("T")
Opener = Callable[[str, SshHost, SshKeySecret], paramiko.Transport]
_PoolKey = tuple[str, str, int, str, tuple[str, ...], bytes]


class SshPool:
    def __init__(self, opener: Opener = open_transport) -> None:
        self._opener = opener
        self._transports: dict[_PoolKey, paramiko.Transport] = {}
        self._connect_locks: dict[_PoolKey, threading.Lock] = {}
        self._lock = threading.Lock()
        self._secret_key = secrets.token_bytes(32)

    def run(
        self,
        host_id: str,
        host: SshHost,
        secret: SshKeySecret,
        use: Callable[[paramiko.Transport], T],
    ) -> T:
        """Call ``use`` with a live authenticated transport for ``host``."""
        key = self._key(host_id, host, secret)
        transport = self._acquire(key, host_id, host, secret)
        try:
            return self._use(key, transport, use)
        except StaleTransport:
            self._discard(key, transport)
            fresh = self._acquire(key, host_id, host, secret)
            try:
                return self._use(key, fresh, use)
            except StaleTransport as exc:
                self._discard(key, fresh)
                raise ActionError(
                    "unreachable", f"the ssh session with {host_id!r} closed before the command"
                ) from exc

    def close_all(self) -> None:
        with self._lock:
            transports = list(self._transports.values())
            self._transports.clear()
        for transport in transports:
            transport.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._transports)

    def _acquire(
        self, key: _PoolKey, host_id: str, host: SshHost, secret: SshKeySecret
    ) -> paramiko.Transport:
        with self._lock:
            transport = self._transports.get(key)
            if _reusable(transport, host):
                assert transport is not None
                return transport
            connect_lock = self._connect_locks.setdefault(key, threading.Lock())
        # One connection attempt per target at a time; others wait and then share it.
        with connect_lock:
            with self._lock:
                transport = self._transports.get(key)
                if _reusable(transport, host):
                    assert transport is not None
                    return transport
            transport = self._opener(host_id, host, secret)
            with self._lock:
                stale = self._transports.get(key)
                self._transports[key] = transport
            if stale is not None:
                stale.close()
            return transport

    def _use(
        self, key: _PoolKey, transport: paramiko.Transport, use: Callable[[paramiko.Transport], T]
    ) -> T:
        try:
            return use(transport)
        except ActionError as exc:
            if exc.stopped_by == "close":
                # A command that outlived its deadline and the KILL signal: its channel, and
                # the transport under it, are closed rather than kept for the next command.
                self._discard(key, transport)
            raise

    def _discard(self, key: _PoolKey, transport: paramiko.Transport) -> None:
        with self._lock:
            if self._transports.get(key) is transport:
                del self._transports[key]
        transport.close()

    def _key(self, host_id: str, host: SshHost, secret: SshKeySecret) -> _PoolKey:
        credential = hmac.new(
            self._secret_key, secret.private_key.reveal(), hashlib.sha256
        ).digest()
        return (host_id, host.address, host.port, host.user, tuple(host.host_keys), credential)


def _reusable(transport: paramiko.Transport | None, host: SshHost) -> bool:
    """Alive, authenticated, and still holding a pinned host key (a re-key may have changed it)."""
    if transport is None or not transport.is_active() or not transport.is_authenticated():
        return False
    blob = transport.get_remote_server_key().asbytes()
    return any(blob == pinned.blob for pinned in parse_pinned_keys(host.host_keys))
