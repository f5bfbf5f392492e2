"""``vault.pub.json``: the public halves, readable while the vault is locked.

The journal writer seals records to the audit key and `sp audit verify --checkpoint` checks
signatures with the checkpoint key, both without the passphrase. The same keys are kept inside
the vault, so a swapped file is detected at unlock.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path

from safeport.errors import EnvironmentProblem
from safeport.vault.files import read_private_file, replace_atomically
from safeport.vault.interface import VaultPublicKeys

FORMAT = "safeport-vault-public-keys"


def encode_public_keys(keys: VaultPublicKeys) -> bytes:
    document = {
        "format": FORMAT,
        "version": 1,
        "audit_x25519": base64.b64encode(keys.audit_x25519).decode("ascii"),
        "checkpoint_ed25519": base64.b64encode(keys.checkpoint_ed25519).decode("ascii"),
        "checkpoint_fingerprint": keys.checkpoint_fingerprint,
    }
    return json.dumps(document, indent=2, sort_keys=True).encode("ascii") + b"\n"


def decode_public_keys(data: bytes, *, source: str) -> VaultPublicKeys:
    try:
        document = json.loads(data)
        if document["format"] != FORMAT or document["version"] != 1:
            raise ValueError("format")
        keys = VaultPublicKeys(
            audit_x25519=base64.b64decode(document["audit_x25519"], validate=True),
            checkpoint_ed25519=base64.b64decode(document["checkpoint_ed25519"], validate=True),
        )
    except (ValueError, TypeError, KeyError, binascii.Error, RecursionError) as exc:
        raise EnvironmentProblem(f"{source} is not a safeport public key file") from exc
    if len(keys.audit_x25519) != 32 or len(keys.checkpoint_ed25519) != 32:
        raise EnvironmentProblem(f"{source} is not a safeport public key file")
    return keys


def read_public_keys(path: Path, *, owner: int | None = None) -> VaultPublicKeys:
    """``owner``: the uid that must own the file (a dedicated gateway's account; default you)."""
    data = read_private_file(path, what="vault public key file", allow_readable=True, owner=owner)
    return decode_public_keys(data, source=str(path))


def write_public_keys(path: Path, keys: VaultPublicKeys) -> None:
    replace_atomically(path, encode_public_keys(keys), mode=0o644)
