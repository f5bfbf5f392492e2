"""Fetch a server's host keys for a human to check and pin (``sp ssh scan``).

Nothing here trusts anything: it runs the key exchange once per key type, reads the key the
server proves it holds, and disconnects before authentication. The result is shown to a person,
who compares the fingerprint with one obtained out of band before putting the key in
``host_keys``; it is never written anywhere.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import paramiko
from paramiko.ssh_exception import IncompatiblePeer

from safeport.action_gateway.executors.interface import ActionError
from safeport.action_gateway.executors.ssh.host_keys import sha256_fingerprint
from safeport.action_gateway.executors.ssh.transport import is_plain_address, translate_ssh_errors

# One key exchange per family, in the order OpenSSH prefers them.
_SCANNED_ALGORITHMS = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "rsa-sha2-512",
)


@dataclass(frozen=True)
class ScannedKey:
    key_type: str
    base64: str
    fingerprint: str

    @property
    def pin(self) -> str:
        """The line to put in ``host_keys`` once the fingerprint has been checked."""
        return f"{self.key_type} {self.base64}"


def scan_host_keys(address: str, port: int, *, timeout_s: float = 10) -> list[ScannedKey]:
    """Every host key the server proves it holds, one per key type it offers."""
    if not is_plain_address(address):
        raise ActionError("invalid_target", "the address is not a plain host name or IP address")
    found: dict[bytes, ScannedKey] = {}
    label = f"{address}:{port}"
    for algorithm in _SCANNED_ALGORITHMS:
        with translate_ssh_errors(label):
            sock = socket.create_connection((address, port), timeout=timeout_s)
            transport = paramiko.Transport(sock)
            try:
                transport.banner_timeout = timeout_s
                transport.get_security_options().key_types = (algorithm,)
                try:
                    transport.start_client(timeout=timeout_s)
                except IncompatiblePeer:
                    continue  # the server has no key of this type
                key = transport.get_remote_server_key()
            finally:
                transport.close()
        blob = key.asbytes()
        found.setdefault(
            blob, ScannedKey(key.get_name(), key.get_base64(), sha256_fingerprint(blob))
        )
    if not found:
        raise ActionError("host_key_mismatch", f"{label} offered no host key type safeport can pin")
    return list(found.values())
