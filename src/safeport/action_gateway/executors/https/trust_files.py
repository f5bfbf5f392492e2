"""Files of the accepted policy that decide whom the gateway trusts (a service's ``ca_file``).

The accepted policy binds a file's *path*, not its content, and the gateway reads the file when
it first connects to the service. Whoever can write that file, or any folder on the way to it,
can swap in a CA of their own, listen on the service's address and receive the credential after
a normal-looking approval. An agent with the human's shell can write what the human can, in
either mode, so such a file is used only if every step to it (the file, each folder above it,
each link and what it points to) is owned by a trusted uid and writable by no one else; a
world-writable folder is accepted only with the sticky bit, where no one else may rename or
replace an entry a trusted uid owns (as /tmp).

The trusted uids are root, and in dedicated mode also the gateway's own account (which no human
of the install is): never the uid of a human the gateway serves. Checked each time a connection
pool is built, on the path itself: a component swapped between the check and the read would
have to be in a folder only a trusted uid may change.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from safeport.errors import Error

_MAX_LINKS = 40


class UntrustedFile(Error):
    """A file that decides trust could be changed by someone the gateway does not trust."""


def trusted_owners(served_uids: frozenset[int], own_uid: int | None = None) -> frozenset[int]:
    """Root, and the gateway's own uid unless it is one of the humans it serves."""
    uid = os.geteuid() if own_uid is None else own_uid
    return frozenset({0}) if uid in served_uids else frozenset({0, uid})


def check_trust_file(path: str, owners: frozenset[int]) -> None:
    """Return if ``path`` and every step to it is owned by ``owners`` and writable by no one
    else; raise :class:`UntrustedFile` naming the first step that is not."""
    if not path.startswith("/"):
        raise UntrustedFile(f"{path} is not an absolute path")
    pending = [part for part in path.split("/") if part]
    current = Path("/")
    _check_step(current, owners, folder=True)
    links = 0
    while pending:
        part = pending.pop(0)
        if part in (".", ".."):
            current = current if part == "." else current.parent
            continue
        step = current / part
        try:
            st = step.lstat()
        except OSError as exc:
            raise UntrustedFile(f"{step} cannot be read ({exc.strerror})") from None
        _judge(step, st, owners, folder=bool(pending) and not stat.S_ISLNK(st.st_mode))
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > _MAX_LINKS:
                raise UntrustedFile(f"{path} has too many symbolic links")
            target = str(step.readlink())
            pending[:0] = [p for p in target.split("/") if p]
            if target.startswith("/"):
                current = Path("/")
            continue
        current = step
    if not current.is_file():
        raise UntrustedFile(f"{path} is not a regular file")


def _check_step(path: Path, owners: frozenset[int], *, folder: bool) -> None:
    _judge(path, path.lstat(), owners, folder=folder)


def _judge(path: Path, st: os.stat_result, owners: frozenset[int], *, folder: bool) -> None:
    if stat.S_ISLNK(st.st_mode):
        if st.st_uid not in owners:
            raise UntrustedFile(f"{path} is a link owned by uid {st.st_uid}")
        return  # a link's own mode bits mean nothing; its folder decides who may replace it
    if st.st_uid not in owners:
        raise UntrustedFile(f"{path} is owned by uid {st.st_uid}, not root or the gateway")
    # Group write is someone else's write, unless the group is root's own.
    writable_by_others = st.st_mode & (stat.S_IWOTH | (stat.S_IWGRP if st.st_gid != 0 else 0))
    if writable_by_others and not (folder and st.st_mode & stat.S_ISVTX):
        raise UntrustedFile(f"{path} can be written by others (mode {st.st_mode & 0o7777:o})")
