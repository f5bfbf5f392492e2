"""The only code that touches the served workspace: resolve, check, open, list and walk.

Every request goes through :meth:`Workspace.locate`, which applies the read policy in the order
DESIGN.md §11 fixes. Files are then opened component by component from a directory descriptor
held since start-up, each step with ``O_NOFOLLOW``, so a symlink swapped in after the checks is
met as an error rather than followed; the final ``fstat`` must match the object that was checked,
be a regular file with a single link, and ``O_NONBLOCK`` keeps a FIFO from ever blocking us.
Nothing here writes to the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from safeport.context_server.policy import (
    BlockReason,
    ReadPolicy,
    Refused,
    looks_binary,
    narrow_scope,
    parse_request_path,
    refusal,
    within,
)

EntryType = Literal["file", "directory", "symlink", "other"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


@dataclass(frozen=True)
class ServedRoot:
    """A configured root: its display name and its real (symlink-free) location."""

    name: str
    path: Path


@dataclass(frozen=True)
class Located:
    """A request that passed every path check: where it is and what it was when checked."""

    root: ServedRoot
    parts: tuple[str, ...]  # resolved, relative to the root
    kind: Literal["file", "directory", "other"]
    st: os.stat_result

    @property
    def absolute(self) -> Path:
        return self.root.path.joinpath(*self.parts)

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

    @property
    def relative(self) -> str:
        return "/".join(self.parts)


class Workspace:
    """The served roots behind one read policy."""

    def __init__(self, roots: Sequence[ServedRoot], policy: ReadPolicy) -> None:
        if not roots:
            raise ValueError("at least one root is required")
        self.roots = tuple(roots)
        self.policy = policy
        self._by_name = {r.name: r for r in self.roots}
        # Set from the client's MCP roots: only ever a subset of the configured roots.
        self.scope: tuple[str, ...] | None = None

    def narrow(self, client_paths: Sequence[str]) -> tuple[str, ...]:
        """Serve only what is inside both the configured roots and the client's roots."""
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
        literal = PurePosixPath(root.path, *request.parts)
        # 1. The literal request, before any lookup: no existence oracle for private names.
        if self.policy.literal_verdict(request.parts, literal):
            raise refusal("private")
        # 2. Resolve symlinks (non-strict: a missing target answers like any other target).
        resolved = PurePosixPath(os.path.realpath(literal))
        home = self._root_of(resolved)
        if home is None:
            raise refusal("out-of-scope")
        # Inside the client's roots, or a folder above one (so "." can still be listed).
        above_scope = False
        if scoped and self.scope is not None and not within(str(resolved), self.scope):
            above_scope = _is_above(str(resolved), self.scope)
            if not above_scope:
                raise refusal("out-of-scope")
        parts = resolved.relative_to(home.path).parts
        # 3. Private again, on where the path really leads.
        if self.policy.is_private(parts, resolved):
            raise refusal("private")
        try:
            st = os.lstat(resolved)
        except OSError as exc:
            # A link loop ends here as ELOOP, or (below) as a link realpath gave up on.
            raise refusal("unreadable-type" if exc.errno == errno.ELOOP else "not-found") from None
        if stat.S_ISLNK(st.st_mode):
            raise refusal("unreadable-type")
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

    def _root_of(self, resolved: PurePosixPath) -> ServedRoot | None:
        # Component-wise containment: /srv/app-secrets is not inside /srv/app.
        for root in self.roots:
            if resolved.is_relative_to(root.path):
                return root
        return None

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
    def open_checked(self, located: Located) -> Iterator[int]:
        """An fd on exactly the checked file, or :class:`Refused` if anything moved."""
        fd = _open_beneath(located.root.path, located.parts)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                raise refusal("unreadable-type")
            if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
                raise refusal("changed")
            yield fd
        finally:
            os.close(fd)

    def read_head(self, located: Located, limit: int) -> FileRead:
        """Up to ``limit`` bytes from the start of a checked text file (binary refused)."""
        with self.open_checked(located) as fd:
            st = os.fstat(fd)
            data = _read_up_to(fd, limit)
        if looks_binary(data):
            raise refusal("binary")
        return FileRead(data, st.st_size, st)

    def iter_chunks(self, located: Located, chunk: int = 1 << 16) -> Generator[bytes, None, None]:
        """The whole checked file in chunks, up to the policy's file size limit."""
        with self.open_checked(located) as fd:
            if os.fstat(fd).st_size > self.policy.max_file_bytes:
                raise refusal("too-large")
            first = True
            while True:
                block = os.read(fd, chunk)
                if not block:
                    return
                if first and looks_binary(block):
                    raise refusal("binary")
                first = False
                yield block

    # -- folders ------------------------------------------------------------------------------

    def list_folder(self, located: Located) -> list[Entry]:
        """Every entry of a checked folder, sorted by name, blocked ones marked."""
        if located.kind != "directory":
            raise refusal("not-a-folder")
        fd = _open_beneath(located.root.path, located.parts, final_dir=True)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
                raise refusal("changed")
            names = sorted(os.listdir(fd))
            base = str(located.absolute)
            entries = [self._entry(located, base, fd, name) for name in names]
        finally:
            os.close(fd)
        return entries

    def _entry(self, folder: Located, base: str, dir_fd: int, name: str) -> Entry:
        absolute = f"{base}/{name}"
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return Entry(name, "other", None, None, "unreadable-type")
        mode = st.st_mode
        is_dir = stat.S_ISDIR(mode)
        top = not folder.parts
        verdict = self.policy.entry_verdict(name, absolute, is_dir=is_dir, top_level=top)
        if verdict == "private":
            return Entry(name, _entry_type(mode), None, None, "private")
        if self.scope is not None and not (
            within(absolute, self.scope) or (is_dir and _is_above(absolute, self.scope))
        ):
            return Entry(name, _entry_type(mode), None, None, "out-of-scope")
        if stat.S_ISLNK(mode):
            parts = (*folder.parts, name)
            link = self._link_verdict(PurePosixPath(absolute), parts)
            return Entry(name, "symlink", None, None, verdict or link)
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

    def _link_verdict(self, absolute: PurePosixPath, parts: Sequence[str]) -> BlockReason | None:
        """A symlink in a listing: judged by its own path and by where it leads."""
        resolved = PurePosixPath(os.path.realpath(absolute))
        home = self._root_of(resolved)
        if home is None:
            return "out-of-scope"
        if self.scope is not None and not within(str(resolved), self.scope):
            return "out-of-scope"
        target_parts = resolved.relative_to(home.path).parts
        if self.policy.is_private(target_parts, resolved):
            return "private"
        try:
            st = os.lstat(resolved)
        except OSError:
            return "unreadable-type"
        is_dir = stat.S_ISDIR(st.st_mode)
        for judged in (parts, target_parts):
            verdict = self.policy.resolved_verdict(judged, resolved, is_dir=is_dir)
            if verdict:
                return verdict
        if is_dir:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return "unreadable-type"
        return self.policy.type_verdict(parts[-1]) or self.policy.type_verdict(target_parts[-1])

    # -- walking ------------------------------------------------------------------------------

    def _stat_entries(self, dir_fd: int) -> Iterator[tuple[str, os.stat_result]]:
        """(name, lstat) of a folder's entries, skipping private and ignored names unread."""
        try:
            names = os.listdir(dir_fd)
        except OSError:
            return
        for name in names:
            if self.policy.is_private_name(name) or self.policy.is_ignored_name(name):
                continue
            try:
                yield name, os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue

    def walk_files(
        self,
        root: ServedRoot,
        start: Sequence[str] = (),
        *,
        max_bytes: int | None = None,
        scoped: bool = True,
    ) -> Iterator[WalkedFile]:
        """Readable-looking regular files under ``start``, never following a link.

        Private and ignored folders are not entered, so their names never reach an index, a
        search result or a journal. Symlinked files are skipped here: their targets are reached
        at their real paths, and anything served is re-checked through ``locate``. Each folder
        is opened from the root with ``O_NOFOLLOW`` on every component, so a folder swapped for
        a link during the walk is skipped instead of listing names from wherever it points.
        """
        scope = self.scope if scoped else None
        stack: list[tuple[str, ...]] = [tuple(start)]
        while stack:
            parts = stack.pop()
            base = "/".join((str(root.path), *parts))
            try:
                fd = _open_beneath(root.path, parts, final_dir=True)
            except Refused:
                continue
            try:
                entries = sorted(self._stat_entries(fd))
            finally:
                os.close(fd)
            subdirs = []
            for name, st in entries:
                child = (*parts, name)
                path = f"{base}/{name}"
                if stat.S_ISDIR(st.st_mode):
                    if self.policy.is_private(child, path):
                        continue
                    if scope is not None and not (within(path, scope) or _is_above(path, scope)):
                        continue
                    if not parts and self.policy.out_of_projects(child, is_dir=True):
                        continue
                    subdirs.append(child)
                elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                    if self.policy.type_verdict(name) is not None:
                        continue
                    if max_bytes is not None and st.st_size > max_bytes:
                        continue
                    if scope is not None and not within(path, scope):
                        continue
                    yield WalkedFile(root, child, st.st_size, st.st_mtime_ns)
            stack.extend(reversed(subdirs))


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


def _open_beneath(root: Path, parts: Sequence[str], *, final_dir: bool = False) -> int:
    """Open ``root/parts`` one component at a time, refusing any symlink on the way."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _lookup_failure(exc) from None
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            flags = _DIR_FLAGS if (not last or final_dir) else _FILE_FLAGS
            try:
                nfd = os.open(name, flags, dir_fd=fd)
            except OSError as exc:
                raise _lookup_failure(exc) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lookup_failure(exc: OSError) -> Refused:
    # ELOOP / ENOTDIR on an O_NOFOLLOW walk: a component became a link or a file after the
    # checks. Everything else is reported as absent, with no detail from the OS.
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return refusal("changed")
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EACCES, errno.EPERM):
        return refusal("unreadable-type")
    return refusal("not-found")


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks = []
    remaining = limit
    while remaining > 0:
        block = os.read(fd, min(remaining, 1 << 20))
        if not block:
            break
        chunks.append(block)
        remaining -= len(block)
    return b"".join(chunks)
