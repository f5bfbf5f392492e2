"""The only code that touches the served workspace: resolve, check, open, list and walk.

Every request goes through :meth:`Workspace.locate`, which applies the read policy in the order
DESIGN.md §11 fixes. Paths are resolved by this module itself, never by ``realpath``: from a
descriptor on the root held since start-up, one component at a time with ``openat`` and
``O_NOFOLLOW``, reading each symlink with ``readlinkat`` and following at most 40 of them (as
the kernel does). Each component is checked against the policy before it is looked up, so a
link cannot walk through a private folder, and ``..`` never climbs above the root. A loop or an
over-long chain is refused, never resolved lexically. Every size, time and type comes from
``fstat`` on a descriptor opened beneath the root (or ``fstatat`` relative to one), never from
a ``stat`` of a path string.

Files are read through a descriptor opened again from the root with ``O_NOFOLLOW`` on every
component, whose ``fstat`` must match the object that was checked, be a regular file with a
single link, and only up to the size it had when opened. ``O_NONBLOCK`` keeps a FIFO from ever
blocking. Walks move from folder to folder by descriptors (``..`` checked against the folder it
must be), so depth costs O(depth), not O(depth²). Nothing here writes to the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from safeport.context_server.names import UndisplayableName, display_name, raw_name
from safeport.context_server.policy import (
    BlockReason,
    ReadPolicy,
    Refused,
    looks_binary,
    narrow_scope,
    refusal,
    within,
)
from safeport.context_server.request_path import MAX_PATH_CHARS, parse_request_path

EntryType = Literal["file", "directory", "symlink", "other"]

MAX_LINKS = 40  # Linux's MAXSYMLINKS
# Lookups one resolution may make: each `..` re-opens its folder from the root, so a link
# target of thousands of `..` cannot make one call cost millions of openat calls.
MAX_LOOKUPS = 65_536
# Sorted name lists of recently listed folders, so later pages of a wide folder cost O(page).
LISTING_CACHE_FOLDERS = 8
LISTING_CACHE_NAMES = 600_000

_O_PATH = getattr(os, "O_PATH", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
# An O_PATH descriptor opens nothing (no device side effects, no FIFO), yet fstat works on it.
_PROBE_FLAGS = (
    (_O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    if _O_PATH
    else (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
)


@dataclass(frozen=True)
class ServedRoot:
    """A configured root: its display name and its real (symlink-free) location."""

    name: str
    path: Path


@dataclass(frozen=True)
class Located:
    """A request that passed every path check: where it is and what it was when checked."""

    root: ServedRoot
    parts: tuple[str, ...]  # resolved, relative to the root, display names
    kind: Literal["file", "directory", "other"]
    st: os.stat_result

    @property
    def absolute(self) -> str:
        return "/".join((str(self.root.path), *self.parts))

    @property
    def relative(self) -> str:
        return "/".join(self.parts) if self.parts else "."


@dataclass(frozen=True)
class Entry:
    """One name in a folder listing; blocked entries keep their name and say why."""

    name: str
    type: EntryType
    size: int | None
    mtime_ns: int | None
    blocked: BlockReason | None


@dataclass(frozen=True)
class FolderPage:
    entries: list[Entry]
    total: int


@dataclass(frozen=True)
class FileRead:
    data: bytes
    total_bytes: int
    st: os.stat_result


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


class Workspace:
    """The served roots behind one read policy."""

    def __init__(self, roots: Sequence[ServedRoot], policy: ReadPolicy) -> None:
        if not roots:
            raise ValueError("at least one root is required")
        self.roots = tuple(roots)
        self.policy = policy
        self._by_name = {r.name: r for r in self.roots}
        self._root_fds: dict[str, int] = {}
        for root in self.roots:
            try:
                self._root_fds[root.name] = os.open(root.path, _DIR_FLAGS)
            except OSError as exc:
                self.close()
                raise refusal("not-found") from exc
        # Roots by their path components, longest first: an absolute link target is followed
        # only into a root whose path it names literally.
        self._root_prefixes = sorted(
            ((tuple(os.fsencode(r.path).split(b"/")[1:]), r) for r in self.roots),
            key=lambda item: -len(item[0]),
        )
        self._names = FolderNames()
        # Set from the client's MCP roots: only ever a subset of the configured roots.
        self.scope: tuple[str, ...] | None = None

    def close(self) -> None:
        for fd in self._root_fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._root_fds.clear()

    def narrow(self, client_paths: Sequence[str]) -> tuple[str, ...]:
        """Serve only what is inside both the configured roots and the client's roots."""
        # The client's own paths are resolved where they are (outside the roots as well): they
        # can only narrow, and nothing from them is ever served or shown.
        real = [os.path.realpath(p) for p in client_paths]
        self.scope = narrow_scope([str(r.path) for r in self.roots], real)
        return self.scope

    @property
    def root_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roots)

    def display(self, root: ServedRoot, parts: Sequence[str]) -> str:
        """The path a client uses to name this entry (root-prefixed when several are served)."""
        rel = "/".join(parts)
        if len(self.roots) == 1:
            return rel or "."
        return f"{root.name}/{rel}" if rel else root.name

    # -- the gate -----------------------------------------------------------------------------

    def locate(self, text: object, *, scoped: bool = True) -> Located:
        """Apply the path checks in order; raise :class:`Refused` on the first miss."""
        request = parse_request_path(text, self.root_names)
        if not request.root:
            raise Refused(
                "invalid", "invalid path: several roots are served; start with a root name"
            )
        root = self._by_name[request.root]
        literal = "/".join((str(root.path), *request.parts))
        # 1. The literal request, before any lookup: no existence oracle for private names.
        if self.policy.literal_verdict(request.parts, PurePosixPath(literal)):
            raise refusal("private")
        # 2. Resolve, component by component beneath the root (each one checked first).
        home, parts, st = self.resolve(root, request.parts)
        resolved = "/".join((str(home.path), *parts))
        # Inside the client's roots, or a folder above one (so "." can still be listed).
        above_scope = False
        if scoped and self.scope is not None and not within(resolved, self.scope):
            above_scope = _is_above(resolved, self.scope)
            if not above_scope:
                raise refusal("out-of-scope")
        # 3. Private again, on where the path really leads.
        if self.policy.is_private(parts, resolved):
            raise refusal("private")
        is_dir = stat.S_ISDIR(st.st_mode)
        if above_scope and not is_dir:
            raise refusal("out-of-scope")
        # 4. Ignored and out-of-project, judged on both the name asked for and the target.
        for judged in (request.parts, parts):
            verdict = self.policy.resolved_verdict(judged, resolved, is_dir=is_dir)
            if verdict:
                raise refusal(verdict)
        kind: Literal["file", "directory", "other"] = (
            "directory" if is_dir else "file" if stat.S_ISREG(st.st_mode) else "other"
        )
        return Located(home, parts, kind, st)

    def resolve(
        self, root: ServedRoot, parts: Sequence[str]
    ) -> tuple[ServedRoot, tuple[str, ...], os.stat_result]:
        """Follow ``parts`` from the root's descriptor; the real parts and their ``fstat``.

        Refuses (never guesses) on a private component, a climb above the root, a link out of
        every root, more than :data:`MAX_LINKS` links, or a missing component.
        """
        pending = list(reversed(parts))
        current: list[str] = []
        links = lookups = 0
        fd = self._open_root(root)
        try:
            while pending:
                lookups += 1
                if lookups > MAX_LOOKUPS:
                    raise refusal("too-many-links")
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not current:
                        raise refusal("out-of-scope")  # above the root: nothing is looked up
                    current.pop()
                    os.close(fd)
                    fd = -1
                    fd = self._open_chain(root, current)
                    lookups += len(current)
                    continue
                self._check_component(root, current, name)
                try:
                    raw = raw_name(name)
                except UndisplayableName:
                    raise refusal("not-found") from None
                child, st = _probe(fd, raw)
                if stat.S_ISLNK(st.st_mode):
                    if child >= 0:
                        os.close(child)
                    links += 1
                    if links > MAX_LINKS:
                        raise refusal("too-many-links")
                    target = _read_link(fd, raw)
                    if target.startswith(b"/"):
                        root, rest = self._root_for(target)
                        os.close(fd)
                        fd = -1
                        fd = self._open_root(root)
                        current = []
                    else:
                        rest = target.split(b"/")
                    pending.extend(reversed([_component(c) for c in rest]))
                    continue
                if stat.S_ISDIR(st.st_mode):
                    os.close(fd)
                    fd = child
                    current.append(name)
                    continue
                if any(p not in ("", ".") for p in pending):
                    os.close(child)
                    raise refusal("not-found")  # a file is not a folder (ENOTDIR)
                os.close(fd)
                fd = child
                current.append(name)
                pending.clear()
            return root, tuple(current), os.fstat(fd)
        finally:
            if fd >= 0:
                os.close(fd)

    def _check_component(self, root: ServedRoot, current: Sequence[str], name: str) -> None:
        """A component is judged before it is looked up: nothing inside a private folder is."""
        if self.policy.is_private_name(name):
            raise refusal("private")
        if self.policy.private_locations and self.policy.is_private(
            (), "/".join((str(root.path), *current, name))
        ):
            raise refusal("private")

    def _root_for(self, target: bytes) -> tuple[ServedRoot, list[bytes]]:
        """The root an absolute link target names literally, and the rest of the target."""
        parts = [p for p in target.split(b"/") if p]
        for prefix, root in self._root_prefixes:
            if tuple(parts[: len(prefix)]) == prefix:
                return root, parts[len(prefix) :]
        raise refusal("out-of-scope")

    def _open_root(self, root: ServedRoot) -> int:
        try:
            return os.open(".", _PROBE_FLAGS | os.O_DIRECTORY, dir_fd=self._root_fds[root.name])
        except (OSError, KeyError) as exc:
            raise refusal("not-found") from exc

    def _open_chain(self, root: ServedRoot, parts: Sequence[str]) -> int:
        """A descriptor on ``root/parts``, every component a real folder (no link followed)."""
        fd = self._open_root(root)
        try:
            for name in parts:
                nfd = os.open(raw_name(name), _PROBE_FLAGS | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except (OSError, UndisplayableName):
            os.close(fd)
            raise refusal("changed") from None
        return fd

    # -- files --------------------------------------------------------------------------------

    def readable_file(self, text: object, *, scoped: bool = True) -> Located:
        """``locate`` plus the checks for content: a regular, readable text type.

        ``scoped=False`` ignores the client's roots (never the policy): the shared search index
        covers the configured roots, and every hit is re-checked with the scope when served."""
        located = self.locate(text, scoped=scoped)
        if located.kind == "directory":
            raise refusal("not-a-file")
        if located.kind != "file" or located.st.st_nlink != 1:
            raise refusal("unreadable-type")
        names = [located.parts[-1]] if located.parts else []
        request = parse_request_path(text, self.root_names)
        if request.parts:
            names.append(request.parts[-1])  # a link is judged by its own name too
        for name in names:
            verdict = self.policy.type_verdict(name)
            if verdict:
                raise refusal(verdict)
        return located

    @contextlib.contextmanager
    def open_checked(self, located: Located) -> Iterator[tuple[int, int]]:
        """An fd on exactly the checked file and its size at open, or :class:`Refused`."""
        fd = self._open_beneath(located.root, located.parts)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                raise refusal("unreadable-type")
            if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
                raise refusal("changed")
            yield fd, st.st_size
        finally:
            os.close(fd)

    def read_head(self, located: Located, limit: int) -> FileRead:
        """Up to ``limit`` bytes from the start of a checked text file (binary refused)."""
        with self.open_checked(located) as (fd, size):
            data = _read_up_to(fd, 0, min(limit, size))
        if looks_binary(data):
            raise refusal("binary")
        return FileRead(data, size, located.st)

    def iter_chunks(
        self, located: Located, chunk: int = 1 << 16, *, start: int = 0
    ) -> Generator[bytes, None, None]:
        """The checked file from byte ``start`` in chunks, never past its size at open."""
        with self.open_checked(located) as (fd, size):
            if size > self.policy.max_file_bytes:
                raise refusal("too-large")
            head = os.pread(fd, min(8192, size), 0)
            if looks_binary(head):
                raise refusal("binary")
            offset = start
            while offset < size:
                block = os.pread(fd, min(chunk, size - offset), offset)
                if not block:
                    return  # the file shrank
                offset += len(block)
                yield block

    def _open_beneath(
        self, root: ServedRoot, parts: Sequence[str], *, final_dir: bool = False
    ) -> int:
        """Open ``root/parts`` one component at a time, refusing any symlink on the way."""
        fd = self._reopen_root(root)
        try:
            for i, name in enumerate(parts):
                last = i == len(parts) - 1
                flags = _DIR_FLAGS if (not last or final_dir) else _FILE_FLAGS
                try:
                    nfd = os.open(raw_name(name), flags, dir_fd=fd)
                except UndisplayableName:
                    raise refusal("not-found") from None
                except OSError as exc:
                    raise _lookup_failure(exc) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _reopen_root(self, root: ServedRoot) -> int:
        try:
            return os.open(".", _DIR_FLAGS, dir_fd=self._root_fds[root.name])
        except (OSError, KeyError) as exc:
            raise refusal("not-found") from exc

    # -- folders ------------------------------------------------------------------------------

    def list_folder(
        self, located: Located, offset: int = 0, limit: int | None = None
    ) -> FolderPage:
        """One page of a checked folder's entries, sorted by name, blocked ones marked.

        The sorted name list is kept against the folder's identity and mtime, so after the
        first page a wide folder's pages cost O(page): only the entries served are examined."""
        if located.kind != "directory":
            raise refusal("not-a-folder")
        fd = self._open_beneath(located.root, located.parts, final_dir=True)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
                raise refusal("changed")
            names = self._names.get(fd, st)
            end = len(names) if limit is None else min(len(names), offset + limit)
            entries = [self._entry(located, fd, names[i]) for i in range(offset, end)]
        finally:
            os.close(fd)
        return FolderPage(entries, len(names))

    def _entry(self, folder: Located, dir_fd: int, name: str) -> Entry:
        absolute = "/".join((folder.absolute, name))
        top = not folder.parts
        if self.policy.is_private_name(name):
            # Not even looked at: a private entry shows its name and nothing about it.
            return Entry(name, "other", None, None, "private")
        try:
            st = _fstat_beneath(dir_fd, raw_name(name))
        except (OSError, UndisplayableName):
            return Entry(name, "other", None, None, "unreadable-type")
        mode = st.st_mode
        is_dir = stat.S_ISDIR(mode)
        verdict = self.policy.entry_verdict(name, absolute, is_dir=is_dir, top_level=top)
        if verdict == "private":
            return Entry(name, _entry_type(mode), None, None, "private")
        if self.scope is not None and not (
            within(absolute, self.scope) or (is_dir and _is_above(absolute, self.scope))
        ):
            return Entry(name, _entry_type(mode), None, None, "out-of-scope")
        if stat.S_ISLNK(mode):
            link = verdict or self._link_verdict(folder, name)
            # The kind "symlink" is shown only where the policy allows the target: a blocked
            # link is just a blocked entry, saying nothing of what it points to.
            kind: EntryType = "symlink" if link in (None, "binary") else "other"
            return Entry(name, kind, None, None, link)
        if is_dir:
            return Entry(name, "directory", None, st.st_mtime_ns, verdict)
        if not stat.S_ISREG(mode):
            return Entry(name, "other", None, None, "unreadable-type")
        if verdict is None and st.st_nlink != 1:
            verdict = "unreadable-type"
        if verdict is None:
            verdict = self.policy.type_verdict(name)
        size = st.st_size if verdict in (None, "binary", "unreadable-type") else None
        if st.st_nlink != 1:
            size = None  # a hard link's size is another file's
        return Entry(name, "file", size, st.st_mtime_ns, verdict)

    def _link_verdict(self, folder: Located, name: str) -> BlockReason | None:
        """A symlink in a listing: judged by its own path and by where it leads, through the
        same resolution as a request; nothing about a target the policy refuses is shown."""
        parts = (*folder.parts, name)
        try:
            home, target, st = self.resolve(folder.root, parts)
        except Refused as exc:
            return _as_block(exc.reason)
        resolved = "/".join((str(home.path), *target))
        if self.scope is not None and not within(resolved, self.scope):
            return "out-of-scope"
        if self.policy.is_private(target, resolved):
            return "private"
        is_dir = stat.S_ISDIR(st.st_mode)
        for judged in (parts, target):
            verdict = self.policy.resolved_verdict(judged, resolved, is_dir=is_dir)
            if verdict:
                return verdict
        if is_dir:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not target:
            return "unreadable-type"
        return self.policy.type_verdict(parts[-1]) or self.policy.type_verdict(target[-1])

    # -- walking ------------------------------------------------------------------------------

    def walk_files(
        self,
        root: ServedRoot,
        start: Sequence[str] = (),
        *,
        max_bytes: int | None = None,
        scoped: bool = True,
    ) -> Iterator[WalkedFile]:
        """Readable-looking regular files under ``start``, in path order, never following a link."""
        for item in self.walk(root, start, max_bytes=max_bytes, scoped=scoped):
            if isinstance(item, WalkedFile):
                yield item

    def walk(
        self,
        root: ServedRoot,
        start: Sequence[str] = (),
        *,
        max_bytes: int | None = None,
        scoped: bool = True,
        after: tuple[str, ...] | None = None,
        folders: bool = False,
        head_for: Callable[[WalkedFile], int | None] | None = None,
    ) -> Iterator[Walked]:
        """Files (and, with ``folders``, each folder before it is entered) in path order.

        Private and ignored folders are not entered, so their names never reach an index, a
        search result or a journal. Symlinks are skipped: their targets are reached at their
        real paths, and anything served is re-checked through ``locate``. The walk holds one
        folder descriptor, descends with ``openat(O_NOFOLLOW)`` and climbs with ``..``, checked
        against the folder it must lead back to (re-opened from the root if it was moved).
        ``after`` resumes the walk: only items whose parts sort after it are produced, and
        folders wholly before it are not entered. ``head_for`` says how many leading bytes of
        a file to read (or None); they are read through the walk's folder descriptor, so
        reading costs O(1) per file however deep it is.
        """
        scope = self.scope if scoped else None
        base = tuple(start)
        try:
            fd = self._open_beneath(root, base, final_dir=True)
        except Refused:
            return
        frames: list[tuple[tuple[str, ...], tuple[int, int], Iterator[str], int]] = []
        parts = base
        rel_chars = sum(len(p) + 1 for p in parts)  # kept per level: O(1) per folder
        root_text = str(root.path)
        # Only a location check or a scope needs the absolute path of an entry; names were
        # judged by _scan, and the folders above by the time the walk entered them.
        paths_needed = scope is not None or bool(self.policy.private_locations)
        try:
            while True:
                st = os.fstat(fd)
                folder_text = "/".join((root_text, *parts)) if paths_needed else ""
                subdirs: list[str] = []
                for name, cst in self._scan(fd):
                    child = (*parts, name)
                    path = f"{folder_text}/{name}" if paths_needed else ""
                    if stat.S_ISDIR(cst.st_mode):
                        if after is not None and child < after and after[: len(child)] != child:
                            continue
                        if rel_chars + len(name) > MAX_PATH_CHARS:
                            continue  # deeper than any path a client can send
                        if paths_needed and self.policy.is_private((), path):
                            continue
                        if scope is not None and not (
                            within(path, scope) or _is_above(path, scope)
                        ):
                            continue
                        if not parts and self.policy.out_of_projects(child, is_dir=True):
                            continue
                        subdirs.append(name)
                    elif stat.S_ISREG(cst.st_mode) and cst.st_nlink == 1:
                        if after is not None and child <= after:
                            continue
                        if self.policy.type_verdict(name) is not None:
                            continue
                        if max_bytes is not None and cst.st_size > max_bytes:
                            continue
                        if scope is not None and not within(path, scope):
                            continue
                        found = WalkedFile(root, child, cst.st_size, cst.st_mtime_ns)
                        want = head_for(found) if head_for is not None else None
                        if want is not None:
                            found = replace(found, head=_read_entry(fd, name, cst, want))
                        yield found
                frames.append((parts, (st.st_dev, st.st_ino), iter(subdirs), rel_chars))
                while frames:
                    here, _ident, pending, here_chars = frames[-1]
                    entering = next(pending, None)
                    if entering is None:
                        frames.pop()
                        if not frames:
                            return
                        climbed, fd = fd, -1
                        fd = self._climb(climbed, root, frames[-1][0], frames[-1][1])
                        if fd < 0:
                            return  # the tree moved under the walk: stop, never guess
                        continue
                    try:
                        child_fd = os.open(raw_name(entering), _DIR_FLAGS, dir_fd=fd)
                    except (OSError, UndisplayableName):
                        continue  # gone, or swapped for a link: skipped, never followed
                    os.close(fd)
                    fd = child_fd
                    parts = (*here, entering)
                    rel_chars = here_chars + len(entering) + 1
                    if folders and (after is None or parts > after):
                        yield WalkedFolder(root, parts)
                    break
        finally:
            if fd >= 0:
                os.close(fd)

    def _climb(
        self, fd: int, root: ServedRoot, parts: tuple[str, ...], ident: tuple[int, int]
    ) -> int:
        """Back to the parent folder (``fd`` is consumed): ``..`` if it is still the folder we
        came from, else that folder re-opened from the root; -1 if it is gone or another."""
        try:
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
        except OSError:
            up = -1
        finally:
            os.close(fd)
        if up >= 0:
            if _ident(up) == ident:
                return up
            os.close(up)
        try:
            again = self._open_beneath(root, parts, final_dir=True)
        except Refused:
            return -1
        if _ident(again) == ident:
            return again
        os.close(again)
        return -1

    def _scan(self, dir_fd: int) -> Iterator[tuple[str, os.stat_result]]:
        """(display name, lstat) of a folder's entries in name order; private and ignored names
        are skipped before anything about them is read. Only the names are held: a folder of
        200,000 entries costs its name list, not 200,000 stat results."""
        try:
            names = sorted(display_name(raw) for raw in os.listdir(dir_fd))
        except OSError:
            return
        for name in names:
            if self.policy.is_private_name(name) or self.policy.is_ignored_name(name):
                continue
            try:
                yield name, os.stat(raw_name(name), dir_fd=dir_fd, follow_symlinks=False)
            except (OSError, UndisplayableName):
                continue


class FolderNames:
    """Sorted display names of recently listed folders, keyed by identity and change times."""

    def __init__(
        self, folders: int = LISTING_CACHE_FOLDERS, names: int = LISTING_CACHE_NAMES
    ) -> None:
        self._max_folders = folders
        self._max_names = names
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, int], tuple[tuple[int, int], list[str]]] = OrderedDict()

    def get(self, dir_fd: int, st: os.stat_result) -> list[str]:
        key = (st.st_dev, st.st_ino)
        stamp = (st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == stamp:
                self._cache.move_to_end(key)
                return hit[1]
        names = sorted(display_name(n) for n in os.listdir(dir_fd))
        with self._lock:
            self._cache[key] = (stamp, names)
            self._cache.move_to_end(key)
            while len(self._cache) > self._max_folders or (
                len(self._cache) > 1
                and sum(len(v[1]) for v in self._cache.values()) > self._max_names
            ):
                self._cache.popitem(last=False)
        return names


def _probe(dir_fd: int, raw: bytes) -> tuple[int, os.stat_result]:
    """A descriptor on the entry itself and its fstat; -1 for a symlink, which is not opened.

    With O_PATH (Linux) the link itself is opened and fstat says it is one. Elsewhere the entry
    is first examined with fstatat relative to the folder's descriptor, then opened."""
    try:
        if not _O_PATH:
            st = os.stat(raw, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                return -1, st
        fd = os.open(raw, _PROBE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _lookup_failure(exc) from None
    try:
        return fd, os.fstat(fd)
    except OSError:
        os.close(fd)
        raise refusal("changed") from None


def _read_entry(dir_fd: int, name: str, seen: os.stat_result, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of the regular file ``name`` in a folder, if it is still the file
    ``seen`` describes (same inode, one link), and never past its size at open."""
    try:
        fd = os.open(raw_name(name), _FILE_FLAGS, dir_fd=dir_fd)
    except (OSError, UndisplayableName):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return None
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            return None
        return _read_up_to(fd, 0, min(limit, st.st_size))
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_link(dir_fd: int, raw: bytes) -> bytes:
    try:
        target = os.readlink(raw, dir_fd=dir_fd)
    except OSError:
        raise refusal("changed") from None
    if not target or len(target) > MAX_PATH_CHARS:
        raise refusal("not-found")
    return target


def _component(raw: bytes) -> str:
    if raw in (b"", b".", b".."):
        return raw.decode()
    return display_name(raw)


def _fstat_beneath(dir_fd: int, raw: bytes) -> os.stat_result:
    fd = os.open(raw, _PROBE_FLAGS, dir_fd=dir_fd) if _O_PATH else -1
    if fd < 0:
        return os.stat(raw, dir_fd=dir_fd, follow_symlinks=False)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _as_block(reason: str) -> BlockReason:
    if reason in ("private", "ignored", "out-of-scope", "binary"):
        return reason  # type: ignore[return-value]
    return "unreadable-type"


def _is_above(path: str, scope: Sequence[str]) -> bool:
    """Whether ``path`` is a folder that contains one of the scope's folders."""
    return any(s.startswith(path.rstrip("/") + "/") for s in scope)


def _entry_type(mode: int) -> EntryType:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _lookup_failure(exc: OSError) -> Refused:
    # ELOOP / ENOTDIR on an O_NOFOLLOW walk: a component became a link or a file after the
    # checks. Everything else is reported as absent, with no detail from the OS.
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return refusal("changed")
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EACCES, errno.EPERM):
        return refusal("unreadable-type")
    return refusal("not-found")


def _read_up_to(fd: int, offset: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0:
        block = os.pread(fd, min(remaining, 1 << 20), offset)
        if not block:
            break
        chunks.append(block)
        remaining -= len(block)
        offset += len(block)
    return b"".join(chunks)
