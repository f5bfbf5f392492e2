"""What an attacker without the passphrase can do to vault.sp: rewrite the clear header."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from safeport.vault.format import _PREFIX, MAGIC, PREFIX_BYTES, VERSION


def split(path: Path) -> tuple[dict[str, Any], bytes]:
    """(header as JSON, ciphertext) of a vault file."""
    data = path.read_bytes()
    _, _, length = _PREFIX.unpack_from(data)
    return json.loads(data[PREFIX_BYTES : PREFIX_BYTES + length]), data[PREFIX_BYTES + length :]


def write_raw_header(path: Path, body: bytes, ciphertext: bytes, *, version: int = VERSION) -> None:
    path.write_bytes(_PREFIX.pack(MAGIC, version, len(body)) + body + ciphertext)


def rewrite_header(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    """Apply ``change`` to the parsed header and store it back, ciphertext untouched."""
    header, ciphertext = split(path)
    change(header)
    write_raw_header(path, json.dumps(header).encode(), ciphertext)
