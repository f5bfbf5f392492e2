"""Resolving a request beneath the served roots, one component at a time, by descriptors.

Never ``realpath``: from a descriptor on the root held since start-up, each component is judged
by the policy before it is looked up, probed with ``openat(O_NOFOLLOW)``, and a symlink is read
with ``readlinkat`` and followed (at most :data:`MAX_LINKS`, as the kernel does) only into a
root whose path its target names literally. ``..`` never climbs above the root; a loop or an
over-long chain is refused, never resolved lexically.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence

from safeport.context_server.policy.display_names import (
    UndisplayableName,
    display_name,
    is_redacted,
    written_name,
)
from safeport.context_server.policy.read_policy import ReadPolicy, refusal
from safeport.context_server.workspace.descriptors import (
    DIR_FLAGS,
    FILE_FLAGS,
    PROBE_FLAGS,
    lookup_failure,
    probe,
    read_link,
)
from safeport.context_server.workspace.model import ServedRoot
from safeport.context_server.workspace.named_entries import disk_name

MAX_LINKS = 40  # Linux's MAXSYMLINKS
# Lookups one resolution may make: each `..` re-opens its folder from the root, so a link
# target of thousands of `..` cannot make one call cost millions of openat calls.
MAX_LOOKUPS = 65_536


class RootDescriptors:
    """Descriptors on the served roots, opened once, and every open made beneath them."""

    def __init__(self, roots: Sequence[ServedRoot]) -> None:
        self._fds: dict[str, int] = {}
        for root in roots:
            try:
                self._fds[root.name] = os.open(root.path, DIR_FLAGS)
            except OSError as exc:
                self.close()
                raise refusal("not-found") from exc
        # Roots by their path components, longest first: an absolute link target is followed
        # only into a root whose path it names literally.
        self._prefixes = sorted(
            ((tuple(os.fsencode(r.path).split(b"/")[1:]), r) for r in roots),
            key=lambda item: -len(item[0]),
        )

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def root_for(self, target: bytes) -> tuple[ServedRoot, list[bytes]]:
        """The root an absolute link target names literally, and the rest of the target."""
        parts = [p for p in target.split(b"/") if p]
        for prefix, root in self._prefixes:
            if tuple(parts[: len(prefix)]) == prefix:
                return root, parts[len(prefix) :]
        raise refusal("out-of-scope")

    def probe_root(self, root: ServedRoot) -> int:
        """An O_PATH descriptor on the root (opens nothing, fstat works)."""
        return self._open_root(root, PROBE_FLAGS | os.O_DIRECTORY)

    def open_beneath(
        self, root: ServedRoot, parts: Sequence[str], *, final_dir: bool = False
    ) -> int:
        """Open ``root/parts`` one component at a time, refusing any symlink on the way."""
        fd = self._open_root(root, DIR_FLAGS)
        try:
            for i, name in enumerate(parts):
                last = i == len(parts) - 1
                flags = DIR_FLAGS if (not last or final_dir) else FILE_FLAGS
                try:
                    nfd = os.open(disk_name(fd, name), flags, dir_fd=fd)
                except UndisplayableName:
                    raise refusal("not-found") from None
                except OSError as exc:
                    raise lookup_failure(exc) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_chain(self, root: ServedRoot, parts: Sequence[str]) -> int:
        """An O_PATH descriptor on ``root/parts``, every component a real folder."""
        fd = self.probe_root(root)
        try:
            for name in parts:
                nfd = os.open(disk_name(fd, name), PROBE_FLAGS | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except (OSError, UndisplayableName):
            os.close(fd)
            raise refusal("changed") from None
        return fd

    def _open_root(self, root: ServedRoot, flags: int) -> int:
        try:
            return os.open(".", flags, dir_fd=self._fds[root.name])
        except (OSError, KeyError) as exc:
            raise refusal("not-found") from exc


def resolve_beneath(
    policy: ReadPolicy, roots: RootDescriptors, root: ServedRoot, parts: Sequence[str]
) -> tuple[ServedRoot, tuple[str, ...], os.stat_result]:
    """Follow ``parts`` from the root's descriptor; the real parts and their ``fstat``.

    Refuses (never guesses) on a private component, a climb above the root, a link out of
    every root, more than :data:`MAX_LINKS` links, or a missing component.
    """
    walk = _Resolution(policy, roots, root, parts)
    try:
        while walk.pending:
            walk.step()
        return walk.root, tuple(walk.current), os.fstat(walk.fd)
    finally:
        if walk.fd >= 0:
            os.close(walk.fd)


class _Resolution:
    """One resolution under way: the descriptor on the folder reached, the components left
    (a link's target pushed in front of them), and the links and lookups spent so far.

    ``fd`` is -1 while it is being replaced, so a refusal mid-way never closes it twice."""

    __slots__ = ("current", "fd", "links", "lookups", "pending", "policy", "root", "roots")

    def __init__(
        self, policy: ReadPolicy, roots: RootDescriptors, root: ServedRoot, parts: Sequence[str]
    ) -> None:
        self.policy = policy
        self.roots = roots
        self.root = root
        self.pending = list(reversed(parts))
        self.current: list[str] = []
        self.links = self.lookups = 0
        self.fd = roots.probe_root(root)

    def step(self) -> None:
        """Take the next component: judge it, look it up, then descend, climb or follow."""
        self.lookups += 1
        if self.lookups > MAX_LOOKUPS:
            raise refusal("too-many-links")
        name = self.pending.pop()
        if name in ("", "."):
            return
        if name == "..":
            self._climb()
            return
        raw = self._looked_up(name)
        child, st = probe(self.fd, raw)
        if stat.S_ISLNK(st.st_mode):
            if child >= 0:
                os.close(child)
            self._follow(raw)
            return
        if stat.S_ISDIR(st.st_mode):
            self._descend(child, name)
            return
        if any(p not in ("", ".") for p in self.pending):
            os.close(child)
            raise refusal("not-found")  # a file is not a folder (ENOTDIR)
        self._descend(child, name)
        self.pending.clear()

    def _looked_up(self, name: str) -> bytes:
        """The component's name on disk, once the policy has judged it (before any lookup)."""
        _check_component(self.policy, self.root, self.current, name)
        try:
            raw = disk_name(self.fd, name)
        except UndisplayableName:
            raise refusal("not-found") from None
        if is_redacted(name):
            # Judged by the name as written too: a marker must not hide what makes it private.
            _check_component(self.policy, self.root, self.current, written_name(raw))
        return raw

    def _descend(self, child: int, name: str) -> None:
        os.close(self.fd)
        self.fd = child
        self.current.append(name)

    def _climb(self) -> None:
        """``..``: the folder above, re-opened from the root (never above the root)."""
        if not self.current:
            raise refusal("out-of-scope")  # above the root: nothing is looked up
        self.current.pop()
        os.close(self.fd)
        self.fd = -1
        self.fd = self.roots.open_chain(self.root, self.current)
        self.lookups += len(self.current)

    def _follow(self, raw: bytes) -> None:
        """A symlink: its target's components go in front of those left, an absolute target
        only into the root whose path it names literally."""
        self.links += 1
        if self.links > MAX_LINKS:
            raise refusal("too-many-links")
        target = read_link(self.fd, raw)
        if target.startswith(b"/"):
            self.root, rest = self.roots.root_for(target)
            os.close(self.fd)
            self.fd = -1
            self.fd = self.roots.probe_root(self.root)
            self.current = []
        else:
            rest = target.split(b"/")
        self.pending.extend(reversed([_component(c) for c in rest]))


def _check_component(
    policy: ReadPolicy, root: ServedRoot, current: Sequence[str], name: str
) -> None:
    """A component is judged before it is looked up: nothing inside a private folder is."""
    if policy.is_private_name(name):
        raise refusal("private")
    if policy.private_locations and policy.is_private(
        (), "/".join((str(root.path), *current, name))
    ):
        raise refusal("private")


def _component(raw: bytes) -> str:
    if raw in (b"", b".", b".."):
        return raw.decode()
    return display_name(raw)
