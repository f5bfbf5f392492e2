"""The only code that touches the served workspace: resolve, check, open and read.

Every request goes through :meth:`Workspace.locate`, which applies the read policy in a fixed
order: the literal request, then where it resolves to, then its type. Paths are resolved beneath
descriptors on the roots held since start-up (``resolution.py``), one component at a time, each
judged before it is looked up, never by ``realpath``. Every size, time and type comes from
``fstat`` on a descriptor opened beneath the root (or ``fstatat`` relative to one), never from
a ``stat`` of a path string.

Files are read through a descriptor opened again from the root with ``O_NOFOLLOW`` on every
component, whose ``fstat`` must match the object that was checked, be a regular file with a
single link, and only up to the size it had when opened. ``O_NONBLOCK`` keeps a FIFO from ever
blocking. Listing a folder is ``listing.py``, walking a root ``walk.py``; both go through the
descriptors opened here. Nothing here writes to the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from safeport.context_server.policy.content_secrets import ContentSecrets
from safeport.context_server.policy.public_material import MAX_JUDGED_BYTES
from safeport.context_server.policy.read_policy import (
    ReadPolicy,
    Refused,
    looks_binary,
    refusal,
)
from safeport.context_server.policy.request_path import parse_request_path
from safeport.context_server.policy.scope import is_above, narrow_scope, within
from safeport.context_server.workspace import listing
from safeport.context_server.workspace import walk as walking
from safeport.context_server.workspace.descriptors import read_up_to
from safeport.context_server.workspace.folder_pages import FolderPages
from safeport.context_server.workspace.listing import FolderNames
from safeport.context_server.workspace.model import FolderPage, Located, ServedRoot
from safeport.context_server.workspace.resolve import RootDescriptors, resolve_beneath
from safeport.context_server.workspace.walk import WalkedFile


@dataclass(frozen=True)
class FileRead:
    data: bytes
    total_bytes: int
    st: os.stat_result


class Workspace:
    """The served roots behind one read policy."""

    def __init__(
        self,
        roots: Sequence[ServedRoot],
        policy: ReadPolicy,
        secrets: ContentSecrets | None = None,
    ) -> None:
        if not roots:
            raise ValueError("at least one root is required")
        self.roots = tuple(roots)
        self.policy = policy
        # What is withheld from each file's text (every read path and the index ask it).
        self.secrets = secrets or ContentSecrets()
        self._by_name = {r.name: r for r in self.roots}
        self.descriptors = RootDescriptors(self.roots)
        self.folder_names = FolderNames()
        self.folder_pages: FolderPages[FolderPage] = FolderPages()
        # Set from the client's MCP roots: only ever a subset of the configured roots.
        self.scope: tuple[str, ...] | None = None

    def close(self) -> None:
        self.folder_pages.close()
        self.descriptors.close()

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
            above_scope = is_above(resolved, self.scope)
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
        """Follow ``parts`` from the root's descriptor (see ``resolution.py``)."""
        return resolve_beneath(self.policy, self.descriptors, root, parts)

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
        """An fd on exactly the checked file and its size at open, or :class:`Refused`.

        A name whose content decides (a certificate, a public key) is judged here, on the
        descriptor every read, excerpt and hash then reads: each path that serves bytes opens
        the file through this one door."""
        fd = self.descriptors.open_beneath(located.root, located.parts)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
                raise refusal("unreadable-type")
            if (st.st_dev, st.st_ino) != (located.st.st_dev, located.st.st_ino):
                raise refusal("changed")
            name = located.parts[-1] if located.parts else ""
            if self.policy.public_rule(name) is not None:
                whole = read_up_to(fd, 0, min(st.st_size, MAX_JUDGED_BYTES + 1))
                verdict = self.policy.content_verdict(name, whole, st.st_size)
                if verdict:
                    raise refusal(verdict)
                # What is served is the bytes judged, never the file read again: a private key
                # written over the certificate in place after the check keeps its inode.
                with _held(whole) as judged:
                    yield judged, len(whole)
                return
            yield fd, st.st_size
        finally:
            os.close(fd)

    def read_head(self, located: Located, limit: int) -> FileRead:
        """Up to ``limit`` bytes from the start of a checked text file (binary refused)."""
        with self.open_checked(located) as (fd, size):
            data = read_up_to(fd, 0, min(limit, size))
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

    # -- folders and walks --------------------------------------------------------------------

    # One page of a checked folder's entries (listing.py), and the walk of a root (walk.py):
    # functions of the workspace, bound here so every caller asks the workspace.
    list_folder = listing.list_folder
    walk = walking.walk_tree

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


@contextlib.contextmanager
def _held(data: bytes) -> Iterator[int]:
    """A descriptor on an anonymous in-memory copy of ``data`` (at most MAX_JUDGED_BYTES)."""
    fd = os.memfd_create("judged", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        yield fd
    finally:
        os.close(fd)
