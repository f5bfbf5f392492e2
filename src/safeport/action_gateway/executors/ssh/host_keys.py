"""The pinned host keys of an SSH host: parsed from the policy, offered as the only key types,
and compared with the key the server presents, by blob, before any authentication byte is sent.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Collection
from dataclasses import dataclass

import paramiko

from safeport.action_gateway.executors.interface import ActionError

# A pinned `ssh-rsa` key may be offered under either SHA-2 signature algorithm.
_HOST_KEY_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256")}


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


def offered_key_types(pinned: list[PinnedKey], supported: Collection[str]) -> tuple[str, ...]:
    """The host key algorithms to offer: only the pinned key types, so a server with several
    keys presents the one we can check instead of whichever paramiko would prefer."""
    wanted = [a for k in pinned for a in _HOST_KEY_ALGORITHMS.get(k.key_type, (k.key_type,))]
    return tuple(dict.fromkeys(a for a in wanted if a in supported))


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
