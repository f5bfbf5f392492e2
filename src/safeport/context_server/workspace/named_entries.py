"""The name on disk a display name stands for, looked up in its folder when it holds a secret.

A display name with a ``[REDACTED:<kind>]`` marker cannot be turned back into a name by itself:
the secret is not in it. Its folder is read instead, and the one entry whose display name it is
answers. Two entries whose names redact alike are both refused, never one read for the other:
which one an id meant cannot be told, and choosing by the order on disk would let a request for
one reach the other.
"""

from __future__ import annotations

import os

from safeport.context_server.policy.display_names import (
    RedactedName,
    UndisplayableName,
    display_name,
    raw_name,
)
from safeport.context_server.workspace.descriptors import DIR_FLAGS


class AmbiguousName(UndisplayableName):
    """Several entries of a folder share this display name: none of them is looked up by it."""


def disk_name(dir_fd: int, display: str) -> bytes:
    """The entry of the folder ``dir_fd`` (any descriptor on it, ``O_PATH`` too) that
    ``display`` names; raises :class:`UndisplayableName` if no single entry is that name."""
    try:
        return raw_name(display)
    except RedactedName:
        pass
    found = [name for name in _names(dir_fd) if display_name(name) == display]
    if len(found) > 1:
        raise AmbiguousName("several names in this folder are shown alike")
    if not found:
        raise UndisplayableName("no name in this folder is shown so")
    return os.fsencode(found[0])


def shared_names(shown: list[str]) -> set[str]:
    """The display names that more than one entry of a folder has (only redacted ones can)."""
    seen: set[str] = set()
    shared: set[str] = set()
    for name in shown:
        if name in seen:
            shared.add(name)
        seen.add(name)
    return shared


def _names(dir_fd: int) -> list[str]:
    try:
        fd = os.open(".", DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return []
    try:
        return os.listdir(fd)
    except OSError:
        return []
    finally:
        os.close(fd)
