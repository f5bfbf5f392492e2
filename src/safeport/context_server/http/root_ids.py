"""What a remote client's approval and tokens name a root by: its name and its directory.

A root's name is its folder's base name (``-2``, ``-3`` for duplicates, in command-line order),
so a name alone would carry an approval for ~/work/proj over to ~/personal/proj when the server
is later started on that folder, or with its roots in another order: the old tokens would keep
working and the gateway would see "the same roots" and ask no one. The identity the gateway
approves and the tokens carry is the name with a digest of the resolved directory, so a root
whose directory changed is another root: absent for the old tokens, and a new card.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DIGEST_HEX = 12
# The wire's limit on one root (``RootName``, 64), less the separator and the digest.
MAX_NAME = 64 - 1 - DIGEST_HEX
# The wire's limit on a directory shown on the card (``RootDir``): 64 of them stay far below
# agent.sock's request limit.
MAX_SHOWN = 256


def root_id(name: str, path: Path) -> str:
    """``name~<12 hex of SHA-256 of the resolved absolute path>``."""
    resolved = os.path.realpath(path)  # absolute, and without symlinks
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:DIGEST_HEX]
    return f"{name[:MAX_NAME]}~{digest}"


def shown_directory(text: str) -> str:
    """The directory (in display form) as the card shows it, within the wire's bound
    (``RootDir``): a path too long keeps its end, the part that tells folders apart."""
    return text if len(text) <= MAX_SHOWN else "…" + text[-(MAX_SHOWN - 1) :]
