"""Reading one folder for a walk: the names it may use, judged by the policy before any stat.

Each folder is read once with ``scandir``: its entry types come from the folder itself, so a
folder, a link or a special file costs no ``stat``, and a name the policy refuses is dropped
before anything about it is read. Names that redact alike are left out together.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

from safeport.context_server.policy.display_names import (
    UndisplayableName,
    display_name,
    is_redacted,
    written_name,
)
from safeport.context_server.policy.read_policy import BlockReason, NameKind, ReadPolicy
from safeport.context_server.workspace.descriptors import stat_entry
from safeport.context_server.workspace.named_entries import disk_name, shared_names


def scan_folder(
    policy: ReadPolicy,
    dir_fd: int,
    only: str | None = None,
    refused: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[str, str, NameKind]]:
    """(display name, name on disk, kind) of the folders and files a walk may use, in display
    name order. The kind is the folder's own ``d_type`` (``lstat`` only where the file system
    gives none), and the policy judges each name by it before anything else is read: private
    and ignored names, links and special files are dropped here. Only these tuples are held:
    a folder of 200,000 entries costs its name list, not 200,000 stat results."""
    if only is not None:
        yield from _scan_one(policy, dir_fd, only)
        return
    kept: list[tuple[str, str, NameKind]] = []
    redacted = False
    try:
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        kind: NameKind = "directory"
                    elif entry.is_file(follow_symlinks=False):
                        kind = "file"
                    else:
                        continue  # a link or a special file: never walked through or read
                except OSError:
                    continue
                disk = entry.name
                name = display_name(disk)
                verdict = _verdict(policy, name, disk, kind)
                if verdict is None:
                    kept.append((name, disk, kind))
                    redacted = redacted or (name is not disk and is_redacted(name))
                elif refused is not None and verdict != "ignored":
                    refused(name, verdict)
    except OSError:
        return
    kept.sort()
    if redacted:
        # Names that redact alike cannot be told apart by a client (and their order would tell
        # how their secrets compare), so none of them is walked.
        shared = shared_names([name for name, _disk, _kind in kept])
        kept = [item for item in kept if item[0] not in shared]
    yield from kept


def _verdict(policy: ReadPolicy, name: str, disk: str, kind: NameKind) -> BlockReason | None:
    """The policy's verdict on a name, judged as written as well when a marker stands in it."""
    verdict = policy.name_verdict(name, kind)
    if verdict is None and name is not disk and is_redacted(name):
        verdict = policy.name_verdict(written_name(disk), kind)
    return verdict


def _scan_one(policy: ReadPolicy, dir_fd: int, name: str) -> list[tuple[str, str, NameKind]]:
    """``scan_folder`` for one entry, by its display name: an ``lstat``, not a folder read."""
    try:
        disk = os.fsdecode(disk_name(dir_fd, name))
        mode = stat_entry(dir_fd, disk).st_mode
    except (OSError, UndisplayableName):
        return []
    kind: NameKind
    if stat.S_ISDIR(mode):
        kind = "directory"
    elif stat.S_ISREG(mode):
        kind = "file"
    else:
        return []
    return [(name, disk, kind)] if _verdict(policy, name, disk, kind) is None else []
