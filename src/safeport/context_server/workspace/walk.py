"""Walking a served root: readable-looking files in path order, by descriptors, never a link.

The walk holds one folder descriptor, descends with ``openat(O_NOFOLLOW | O_DIRECTORY)`` and
climbs with ``..``, checked against the folder it must lead back to (re-opened from the root if
it was moved), so depth costs O(depth), not O(depth²). Each folder is read once with
``scandir`` (``folder_scan.py``): its entry types come from the folder itself, so a folder, a
link or a special file costs no ``stat``, and neither does a file whose name the policy refuses;
only a file that may be served is ``lstat``-ed, for its size, time and link count.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace

from safeport.context_server.policy.read_policy import (
    Refused,
)
from safeport.context_server.policy.request_path import MAX_PATH_CHARS
from safeport.context_server.policy.scope import is_above, within
from safeport.context_server.workspace.descriptors import DIR_FLAGS, ident, read_entry, stat_entry
from safeport.context_server.workspace.folder_scan import scan_folder
from safeport.context_server.workspace.model import ServedRoot, WorkspaceView

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
    walker = _Walker(workspace, root, scoped, max_bytes, after, head_for, linked, refused)
    base = tuple(start)
    try:
        walker.fd = workspace.descriptors.open_beneath(root, base, final_dir=True)
    except Refused:
        return
    frames: list[_Frame] = []
    parts = base
    rel_chars = sum(len(p) + 1 for p in parts)  # kept per level: O(1) per folder
    try:
        while True:
            if opened is not None:
                opened(parts, walker.fd)
            here_ident = ident(walker.fd)
            subdirs = yield from walker.files_in(parts, rel_chars, only if parts == base else None)
            frames.append((parts, here_ident, iter(subdirs), rel_chars))
            entered = walker.enter_next(frames)
            if entered is None:
                return
            parts, rel_chars = entered
            if folders and (after is None or parts > after):
                yield WalkedFolder(root, parts)
    finally:
        if walker.fd >= 0:
            walker.close()


# A folder the walk has read: its parts, its identity (to come back to it by ``..``), the
# subfolders still to enter, and the length of its relative path.
_Frame = tuple[tuple[str, ...], tuple[int, int], Iterator[tuple[str, str]], int]


class _Walker:
    """One walk's rules, worked out once, and the descriptor on the folder it is in.

    ``fd`` is -1 while it is being replaced, so an error mid-way never closes it twice."""

    __slots__ = (
        "after",
        "fd",
        "head_for",
        "linked",
        "max_bytes",
        "paths_needed",
        "policy",
        "refused",
        "root",
        "root_text",
        "scope",
        "workspace",
    )

    def __init__(
        self,
        workspace: WorkspaceView,
        root: ServedRoot,
        scoped: bool,
        max_bytes: int | None,
        after: tuple[str, ...] | None,
        head_for: Callable[[WalkedFile], int | None] | None,
        linked: Callable[[tuple[str, ...]], None] | None,
        refused: RefusalHook | None,
    ) -> None:
        self.workspace = workspace
        self.policy = workspace.policy
        self.scope = workspace.scope if scoped else None
        self.root = root
        self.root_text = str(root.path)
        self.max_bytes, self.after, self.head_for = max_bytes, after, head_for
        self.linked, self.refused = linked, refused
        # Only a location check or a scope needs the absolute path of an entry; names were
        # judged by scan_folder, and the folders above by the time the walk entered them.
        self.paths_needed = self.scope is not None or bool(self.policy.private_locations)
        self.fd = -1

    def close(self) -> None:
        os.close(self.fd)
        self.fd = -1

    def files_in(
        self, parts: tuple[str, ...], rel_chars: int, only: str | None
    ) -> Generator[WalkedFile, None, list[tuple[str, str]]]:
        """The files of the folder at ``fd`` (``parts``) the walk produces, in order; returns
        the subfolders it will enter. The per-file work is inline: this loop is the walk's cost."""
        policy, scope, after, fd, root = self.policy, self.scope, self.after, self.fd, self.root
        refused, linked, max_bytes, head_for = (
            self.refused,
            self.linked,
            self.max_bytes,
            self.head_for,
        )
        paths_needed = self.paths_needed
        folder_text = "/".join((self.root_text, *parts)) if paths_needed else ""
        subdirs: list[tuple[str, str]] = []
        heard = None
        if refused is not None:
            heard = _prefixed(refused, parts)
        for name, disk, kind in scan_folder(policy, fd, only, heard):
            child = (*parts, name)
            if policy.private_paths and policy.is_private_path(child):
                continue  # a `[private]` path pattern names it (names were judged by scan_folder)
            path = f"{folder_text}/{name}" if paths_needed else ""
            if kind == "directory":
                if self._enters(child, path, rel_chars + len(name)):
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
        return subdirs

    def _enters(self, child: tuple[str, ...], path: str, chars: int) -> bool:
        """Whether the walk enters the subfolder ``child`` (``chars``: its path's length)."""
        after = self.after
        if after is not None and child < after and after[: len(child)] != child:
            return False
        if chars > MAX_PATH_CHARS:
            return False  # deeper than any path a client can send
        if self.paths_needed and self.policy.is_private((), path):
            if self.refused is not None:
                self.refused(child, "private-location")
            return False
        scope = self.scope
        if scope is not None and not (within(path, scope) or is_above(path, scope)):
            return False
        return not (len(child) == 1 and self.policy.out_of_projects(child, is_dir=True))

    def enter_next(self, frames: list[_Frame]) -> tuple[tuple[str, ...], int] | None:
        """Into the next subfolder still pending (climbing back out of finished ones): its
        parts and path length, or None when the walk is done or the tree moved under it."""
        while frames:
            here, _ident, pending, here_chars = frames[-1]
            entering = next(pending, None)
            if entering is None:
                frames.pop()
                if not frames:
                    return None
                climbed, self.fd = self.fd, -1
                self.fd = _climb(self.workspace, climbed, self.root, frames[-1][0], frames[-1][1])
                if self.fd < 0:
                    return None  # the tree moved under the walk: stop, never guess
                continue
            try:
                child_fd = os.open(entering[1], DIR_FLAGS, dir_fd=self.fd)
            except OSError:
                continue  # gone, or swapped for a link: skipped, never followed
            os.close(self.fd)
            self.fd = child_fd
            return (*here, entering[0]), here_chars + len(entering[0]) + 1
        return None


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
