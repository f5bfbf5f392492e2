"""Listing a checked folder: one page of entries, sorted by name, blocked ones marked.

An entry is looked at once, with one ``fstatat`` relative to the folder's descriptor (never
followed): its type and size come from that, and what its name alone says comes from the
policy's (name, type) cache. A private name is not looked at at all. A symlink is judged by
where it leads, through the same resolution as a request, every time it is listed.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict

from safeport.context_server.policy.display_names import display_name, is_redacted, written_name
from safeport.context_server.policy.read_policy import (
    BlockReason,
    NameKind,
    ReadPolicy,
    Refused,
    refusal,
)
from safeport.context_server.policy.scope import is_above, within
from safeport.context_server.workspace.model import (
    Entry,
    EntryType,
    FolderPage,
    Located,
    WorkspaceView,
)

# What a listing shows for each file type, and the kind its name is judged as.
_KINDS: dict[int, tuple[EntryType, NameKind]] = {
    stat.S_IFDIR: ("directory", "directory"),
    stat.S_IFREG: ("file", "file"),
    stat.S_IFLNK: ("symlink", "other"),
}
_OTHER: tuple[EntryType, NameKind] = ("other", "other")

# Sorted name lists of recently listed folders, so later pages of a wide folder cost O(page)
# and a folder listed again is not read and sorted again; the names held are bounded below.
LISTING_CACHE_FOLDERS = 64
LISTING_CACHE_NAMES = 600_000


def list_folder(
    workspace: WorkspaceView, located: Located, offset: int = 0, limit: int | None = None
) -> FolderPage:
    """One page of a checked folder's entries, sorted by name, blocked ones marked.

    The sorted name list is kept against the folder's identity and mtime, so after the
    first page a wide folder's pages cost O(page): only the entries served are examined."""
    if located.kind != "directory":
        raise refusal("not-a-folder")
    fd = workspace.descriptors.open_beneath(located.root, located.parts, final_dir=True)
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
            raise refusal("changed")
        # A page is kept for the folder as it is now, reached by this path, under this policy
        # and client scope (``folder_pages.py``): anything else makes another page. Both are
        # read once: the client's roots may change while the page is made, and the page must
        # be judged under the scope it is kept for.
        policy, scope = workspace.policy, workspace.scope
        key = (
            st.st_dev,
            st.st_ino,
            st.st_mtime_ns,
            st.st_ctime_ns,
            located.root.name,
            located.parts,
            offset,
            limit,
            scope,
        )
        pages = workspace.folder_pages
        kept = pages.find(key, policy)
        if kept is not None:
            return kept
        watched = pages.watch(fd)  # before any entry is examined
        try:
            names, disk = workspace.folder_names.get(fd, st)
            end = len(names) if limit is None else min(len(names), offset + limit)
            look = _FolderLook(workspace, located, fd, policy, scope)
            entries = [
                _twin(names[i]) if _has_twin(names, i) else look.entry(names[i], disk[i])
                for i in range(offset, end)
            ]
        except BaseException:
            if watched is not None:
                pages.release(watched)
            raise
    finally:
        os.close(fd)
    page = FolderPage(tuple(entries), len(names))
    if watched is not None:
        if look.saw_link:
            pages.release(watched)
        else:
            pages.keep(key, policy, watched, page)
    return page


def _has_twin(names: list[str], i: int) -> bool:
    """Whether another entry is shown by the same name (only names holding secrets can be):
    sorted by display name, such entries are neighbours."""
    name = names[i]
    return is_redacted(name) and (
        (i > 0 and names[i - 1] == name) or (i + 1 < len(names) and names[i + 1] == name)
    )


def _twin(name: str) -> Entry:
    # Neither can be read by this name, and nothing about either is shown.
    return Entry(name, "other", None, "unreadable-type")


class _FolderLook:
    """What one listing judges every entry against, worked out once for the page."""

    __slots__ = (
        "base",
        "dir_fd",
        "folder",
        "hidden_here",
        "paths",
        "policy",
        "saw_link",
        "scope",
        "top",
        "workspace",
    )

    def __init__(
        self,
        workspace: WorkspaceView,
        folder: Located,
        dir_fd: int,
        policy: ReadPolicy,
        scope: tuple[str, ...] | None,
    ) -> None:
        self.workspace = workspace
        self.policy = policy
        self.folder = folder
        self.dir_fd = dir_fd
        self.base = folder.absolute
        self.scope = scope
        # safeport's own folders among the entries, worked out once for the folder: every entry
        # (the folder is inside one) or the names that are one; no per-entry path is built.
        whole, names = self.policy.locations_in(self.base)
        self.hidden_here: frozenset[str] | None = None if whole else names
        # Path patterns are matched per entry only when there are some.
        self.paths = bool(self.policy.private_paths)
        self.top = not folder.parts and self.policy.projects is not None
        # A link is judged by where it leads, which no event on this folder reports.
        self.saw_link = False

    def entry(self, name: str, disk: str) -> Entry:
        """``name`` is the display name, ``disk`` the same name as ``listdir`` gave it."""
        policy = self.policy
        if (
            policy.is_private_name(name)
            or (self.paths and policy.is_private_path((*self.folder.parts, name)))
            or (is_redacted(name) and policy.is_private_name(written_name(disk)))
        ):
            # Not even looked at: a private entry shows its name and nothing about it.
            return Entry(name, "other", None, "private")
        try:
            st = os.stat(disk, dir_fd=self.dir_fd, follow_symlinks=False)  # fstatat, no follow
        except OSError:
            return Entry(name, "other", None, "unreadable-type")
        shown, kind = _KINDS.get(stat.S_IFMT(st.st_mode), _OTHER)
        is_dir = shown == "directory"
        # The kind is the entry's own, from the lstat just made: the cached verdict is for it.
        named = policy.name_verdict(name, kind)
        scope = self.scope
        hidden = self.hidden_here
        if named == "private" or hidden is None or name in hidden:
            return Entry(name, shown, None, "private")
        verdict: BlockReason | None = None
        if named == "ignored":
            verdict = "ignored"
        elif self.top and policy.out_of_projects((name,), is_dir=is_dir):
            verdict = "out-of-scope"
        if scope is not None and not _in_scope(f"{self.base}/{name}", scope, is_dir=is_dir):
            return Entry(name, shown, None, "out-of-scope")
        if shown == "symlink":
            self.saw_link = True
            link = verdict or _link_verdict(self.workspace, self.folder, name, self.scope)
            # The kind "symlink" is shown only where the policy allows the target: a blocked
            # link is just a blocked entry, saying nothing of what it points to.
            listed: EntryType = "symlink" if link in (None, "binary") else "other"
            return Entry(name, listed, None, link)
        if is_dir:
            return Entry(name, "directory", None, verdict)
        if shown != "file":
            return Entry(name, "other", None, "unreadable-type")
        if st.st_nlink != 1:
            # A hard link is another file's too: neither readable nor its size shown.
            return Entry(name, "file", None, verdict or "unreadable-type")
        if verdict is None:
            verdict = named  # the file's type verdict (private and ignored returned above)
        size = st.st_size if verdict in (None, "binary", "unreadable-type") else None
        return Entry(name, "file", size, verdict)


def _in_scope(absolute: str, scope: tuple[str, ...], *, is_dir: bool) -> bool:
    return within(absolute, scope) or (is_dir and is_above(absolute, scope))


def _link_verdict(
    workspace: WorkspaceView, folder: Located, name: str, scope: tuple[str, ...] | None
) -> BlockReason | None:
    """A symlink in a listing: judged by its own path and by where it leads, through the
    same resolution as a request; nothing about a target the policy refuses is shown."""
    policy = workspace.policy
    parts = (*folder.parts, name)
    try:
        home, target, st = workspace.resolve(folder.root, parts)
    except Refused as exc:
        return _as_block(exc.reason)
    resolved = "/".join((str(home.path), *target))
    if scope is not None and not within(resolved, scope):
        return "out-of-scope"
    if policy.is_private(target, resolved):
        return "private"
    is_dir = stat.S_ISDIR(st.st_mode)
    for judged in (parts, target):
        verdict = policy.resolved_verdict(judged, resolved, is_dir=is_dir)
        if verdict:
            return verdict
    if is_dir:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not target:
        return "unreadable-type"
    return policy.type_verdict(parts[-1]) or policy.type_verdict(target[-1])


class FolderNames:
    """Sorted display names of recently listed folders, keyed by identity and change times."""

    def __init__(
        self, folders: int = LISTING_CACHE_FOLDERS, names: int = LISTING_CACHE_NAMES
    ) -> None:
        self._max_folders = folders
        self._max_names = names
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, int], tuple[tuple[int, int], list[str], list[str]]] = (
            OrderedDict()
        )

    def get(self, dir_fd: int, st: os.stat_result) -> tuple[list[str], list[str]]:
        """The folder's display names in order, and beside each the name as ``listdir`` gave
        it (the same string object for a plain name), so no entry is decoded twice."""
        key = (st.st_dev, st.st_ino)
        stamp = (st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == stamp:
                self._cache.move_to_end(key)
                return hit[1], hit[2]
        found = os.listdir(dir_fd)
        shown = [display_name(n) for n in found]
        if all(a is b for a, b in zip(shown, found, strict=True)):
            names = disk = sorted(found)  # every name is its own display form: one list
        else:
            # By display name alone: for names that redact alike, the order of the names on
            # disk would tell how their secrets compare.
            pairs = sorted(zip(shown, found, strict=True), key=lambda pair: pair[0])
            names = [a for a, _ in pairs]
            disk = [b for _, b in pairs]
        with self._lock:
            self._cache[key] = (stamp, names, disk)
            self._cache.move_to_end(key)
            while len(self._cache) > self._max_folders or (
                len(self._cache) > 1
                and sum(len(v[1]) for v in self._cache.values()) > self._max_names
            ):
                self._cache.popitem(last=False)
        return names, disk


def _as_block(reason: str) -> BlockReason:
    if reason in ("private", "ignored", "out-of-scope", "binary"):
        return reason  # type: ignore[return-value]
    return "unreadable-type"
