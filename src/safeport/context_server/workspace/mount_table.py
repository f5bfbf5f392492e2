"""The process's mount table: whether it changed, and which folders no event can vouch for.

A mount placed on a name in a folder changes what the name is (a file becomes a FIFO, another
file, a folder) with no event on the folder: inotify reports what happens to files, never to
the mount table. A file mounted on a name is also written through its own path with no event
on the folder that shows it. On a network or FUSE file system (NFS, SMB, 9p, virtiofs, sshfs:
the folders a container or a VM shares from its host), a change made by the other side raises
no event here at all. ``/proc/self/mountinfo`` reports every change of the table to poll(2)
(``POLLPRI``), and lists every mount with its file system type.
"""

from __future__ import annotations

import os
import re
import select
import weakref
from pathlib import Path

_MOUNTINFO = "/proc/self/mountinfo"
_ESCAPED = re.compile(rb"\\([0-7]{3})")  # the kernel writes space, tab, newline, \ as \ooo
# File systems whose files can change with no event here (another machine, or a daemon behind
# the kernel's back); ``fuse`` and ``fuse.<name>`` are matched by their start.
_UNSEEN_TYPES = frozenset(
    {
        b"9p",
        b"afs",
        b"ceph",
        b"cifs",
        b"glusterfs",
        b"lustre",
        b"ncpfs",
        b"nfs",
        b"nfs4",
        b"smb3",
        b"smbfs",
        b"virtiofs",
    }
)


class MountTable:
    """One look-out on the table; its owner calls every method under one lock."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self._parents: frozenset[bytes] | None = None  # folders holding a mount point
        self._unseen: frozenset[bytes] = frozenset()  # mount ids of file systems as above
        try:
            self._fd = os.open(_MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = -1
        else:
            self._poll.register(self._fd, select.POLLPRI | select.POLLERR)
            # A table dropped without close() still gives its descriptor back.
            self._closer = weakref.finalize(self, os.close, self._fd)
            self._closer.atexit = False

    def close(self) -> None:
        if self._fd >= 0:
            self._poll.unregister(self._fd)
            self._closer()
            self._fd = -1

    def changed(self) -> bool:
        """Whether the table changed since the last look; always when it cannot be watched."""
        if self._fd < 0:
            return True
        if self._poll.poll(0):  # the look itself takes the change in
            self._parents = None
            return True
        return False

    def unseen(self, dir_fd: int) -> bool:
        """Whether a change in the folder open on ``dir_fd`` may raise no event: a name in it is
        a mount point, or it is on a file system of :data:`_UNSEEN_TYPES` (or cannot be told)."""
        try:
            folder = os.fsencode(Path(f"/proc/self/fd/{dir_fd}").readlink())
            mount = _mount_id(dir_fd)
            if self._parents is None:
                self._parents, self._unseen = _read_table()
        except OSError:
            return True
        return mount is None or mount in self._unseen or folder in self._parents


def _mount_id(fd: int) -> bytes | None:
    for line in Path(f"/proc/self/fdinfo/{fd}").read_bytes().splitlines():
        if line.startswith(b"mnt_id:"):
            return line[len(b"mnt_id:") :].strip()
    return None


def _read_table() -> tuple[frozenset[bytes], frozenset[bytes]]:
    """The folders holding a mount point, and the ids of mounts of :data:`_UNSEEN_TYPES`."""
    folders = set()
    unseen = set()
    for line in Path(_MOUNTINFO).read_bytes().splitlines():
        # "<id> <parent> <dev> <root> <mount point> <options> [<tags>...] - <type> ..."
        fields = line.split(b" ")
        if len(fields) < 5 or b"-" not in fields[5:]:
            continue
        point = _ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        if point != b"/":
            folders.add(point.rpartition(b"/")[0] or b"/")
        after = fields.index(b"-", 5) + 1
        kind = fields[after] if after < len(fields) else b""
        if kind in _UNSEEN_TYPES or kind == b"fuse" or kind.startswith(b"fuse."):
            unseen.add(fields[0])
    return frozenset(folders), frozenset(unseen)
