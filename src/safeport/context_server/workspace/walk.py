"""Walking a served root: readable-looking files in path order, by descriptors, never a link.

The walk holds one folder descriptor, descends with ``openat(O_NOFOLLOW | O_DIRECTORY)`` and
climbs with ``..``, checked against the folder it must lead back to (re-opened from the root if
it was moved), so depth costs O(depth), not O(depth²). Each folder is read once with
``scandir``: its entry types come from the folder itself, so a folder, a link or a special file
costs no ``stat``, and neither does a file whose name the policy refuses; only a file that may
be served is ``lstat``-ed, for its size, time and link count.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from safeport.context_server.policy.display_names import (
    UndisplayableName,
    display_name,
    is_redacted,
    written_name,
)
from safeport.context_server.policy.read_policy import (
    BlockReason,
    NameKind,
    ReadPolicy,
    Refused,
)
from safeport.context_server.policy.request_path import MAX_PATH_CHARS
from safeport.context_server.policy.scope import is_above, within
from safeport.context_server.workspace.descriptors import DIR_FLAGS, ident, read_entry, stat_entry
from safeport.context_server.workspace.model import ServedRoot, WorkspaceView
from safeport.context_server.workspace.named_entries import disk_name, shared_names

# Called with each folder's parts and descriptor as the walk opens it, before its entries are
# read (a change watch added there misses nothing the walk does not see).
FolderHook = Callable[[tuple[str, ...], int], None]
# Called with the parts of each entry the walk leaves out by the read policy, and why: a private
# or unreadable name, one of safeport's own folders, a file over ``max_bytes``. Ignored
# (generated) folders are not reported: they are left out by design, not refused.
RefusalHook = Callable[[tuple[str, ...], str], None]


@dataclass(frozen=True)
class WalkedFile:
    root: ServedRoot
    parts: tuple[str, ...]
    size: int
    mtime_ns: int
    # The file's first bytes, read through the walk's own folder descriptor when asked for
    # (None if not asked, or if the file was no longer the one the walk saw).
    head: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def relative(self) -> str:
        return "/".join(self.parts)


@dataclass(frozen=True)
class WalkedFolder:
    """A folder the walk is about to enter (reported only when asked, as a progress mark)."""

    root: ServedRoot
    parts: tuple[str, ...]


Walked = WalkedFile | WalkedFolder


def walk_tree(
    workspace: WorkspaceView,
    root: ServedRoot,
    start: Sequence[str] = (),
    *,
    max_bytes: int | None = None,
    scoped: bool = True,
    after: tuple[str, ...] | None = None,
    folders: bool = False,
    head_for: Callable[[WalkedFile], int | None] | None = None,
    opened: FolderHook | None = None,
    only: str | None = None,
    linked: Callable[[tuple[str, ...]], None] | None = None,
    refused: RefusalHook | None = None,
) -> Iterator[Walked]:
    """Files (and, with ``folders``, each folder before it is entered) in path order.

    Private and ignored folders are not entered, so their names never reach an index, a
    search result or a journal. Symlinks are skipped: their targets are reached at their
    real paths, and anything served is re-checked through ``locate``. ``after`` resumes the
    walk: only items whose parts sort after it are produced, and folders wholly before it are
    not entered. ``head_for`` says how many leading bytes of a file to read (or None); they are
    read through the walk's folder descriptor, so reading costs O(1) per file however deep.
    ``only`` limits the start folder to that one entry (and, if it is a folder, what is under
    it), judged exactly as a walk of the whole folder would judge it. ``linked`` hears of each
    regular file left out for having more than one link, ``refused`` of each entry the policy
    leaves out (see :data:`RefusalHook`).
    """
    policy = workspace.policy
    scope = workspace.scope if scoped else None
    base = tuple(start)
    try:
        fd = workspace.descriptors.open_beneath(root, base, final_dir=True)
    except Refused:
        return
    frames: list[tuple[tuple[str, ...], tuple[int, int], Iterator[tuple[str, str]], int]] = []
    parts = base
    rel_chars = sum(len(p) + 1 for p in parts)  # kept per level: O(1) per folder
    root_text = str(root.path)
    # Only a location check or a scope needs the absolute path of an entry; names were
    # judged by _scan, and the folders above by the time the walk entered them.
    paths_needed = scope is not None or bool(policy.private_locations)
    try:
        while True:
            if opened is not None:
                opened(parts, fd)
            here_ident = ident(fd)
            folder_text = "/".join((root_text, *parts)) if paths_needed else ""
            subdirs: list[tuple[str, str]] = []
            heard = None
            if refused is not None:
                heard = _prefixed(refused, parts)
            for name, disk, kind in _scan(policy, fd, only if parts == base else None, heard):
                child = (*parts, name)
                if policy.private_paths and policy.is_private_path(child):
                    continue  # a `[private]` path pattern names it (names were judged by _scan)
                path = f"{folder_text}/{name}" if paths_needed else ""
                if kind == "directory":
                    if after is not None and child < after and after[: len(child)] != child:
                        continue
                    if rel_chars + len(name) > MAX_PATH_CHARS:
                        continue  # deeper than any path a client can send
                    if paths_needed and policy.is_private((), path):
                        if refused is not None:
                            refused(child, "private-location")
                        continue
                    if scope is not None and not (within(path, scope) or is_above(path, scope)):
                        continue
                    if not parts and policy.out_of_projects(child, is_dir=True):
                        continue
                    subdirs.append((name, disk))
                    continue
                if after is not None and child <= after:
                    continue
                try:
                    cst = stat_entry(fd, disk)
                except OSError:
                    continue
                if not stat.S_ISREG(cst.st_mode):
                    continue  # replaced since the folder was read
                if cst.st_nlink != 1:
                    if linked is not None:
                        linked(child)
                    continue
                if max_bytes is not None and cst.st_size > max_bytes:
                    if refused is not None:
                        refused(child, "too-large")
                    continue
                if scope is not None and not within(path, scope):
                    continue
                found = WalkedFile(root, child, cst.st_size, cst.st_mtime_ns)
                want = head_for(found) if head_for is not None else None
                if want is not None:
                    head = read_entry(fd, disk, cst, want)
                    # A certificate or public key file is served only by its content: judged
                    # on the bytes read here, which the index and a search then use.
                    if head is not None and policy.content_verdict(name, head, cst.st_size):
                        if refused is not None:
                            refused(child, "key-material")
                        continue
                    found = replace(found, head=head)
                yield found
            frames.append((parts, here_ident, iter(subdirs), rel_chars))
            while frames:
                here, _ident, pending, here_chars = frames[-1]
                entering = next(pending, None)
                if entering is None:
                    frames.pop()
                    if not frames:
                        return
                    climbed, fd = fd, -1
                    fd = _climb(workspace, climbed, root, frames[-1][0], frames[-1][1])
                    if fd < 0:
                        return  # the tree moved under the walk: stop, never guess
                    continue
                try:
                    child_fd = os.open(entering[1], DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # gone, or swapped for a link: skipped, never followed
                os.close(fd)
                fd = child_fd
                parts = (*here, entering[0])
                rel_chars = here_chars + len(entering[0]) + 1
                if folders and (after is None or parts > after):
                    yield WalkedFolder(root, parts)
                break
    finally:
        if fd >= 0:
            os.close(fd)


def _climb(
    workspace: WorkspaceView,
    fd: int,
    root: ServedRoot,
    parts: tuple[str, ...],
    ident_: tuple[int, int],
) -> int:
    """Back to the parent folder (``fd`` is consumed): ``..`` if it is still the folder we
    came from, else that folder re-opened from the root; -1 if it is gone or another."""
    try:
        up = os.open("..", DIR_FLAGS, dir_fd=fd)
    except OSError:
        up = -1
    finally:
        os.close(fd)
    if up >= 0:
        if ident(up) == ident_:
            return up
        os.close(up)
    try:
        again = workspace.descriptors.open_beneath(root, parts, final_dir=True)
    except Refused:
        return -1
    if ident(again) == ident_:
        return again
    os.close(again)
    return -1


def _prefixed(hook: RefusalHook, parts: tuple[str, ...]) -> Callable[[str, str], None]:
    return lambda name, reason: hook((*parts, name), reason)


def _scan(
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
    """``_scan`` for one entry, by its display name: an ``lstat`` instead of reading a folder."""
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
