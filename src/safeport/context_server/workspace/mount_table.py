"""The process's mount table: whether it changed, and which folders hold a mount point.

A mount placed on a name in a folder changes what the name is (a file becomes a FIFO, another
file, a folder) with no event on the folder: inotify reports what happens to files, never to
the mount table. A file mounted on a name is also written through its own path with no event
on the folder that shows it. ``/proc/self/mountinfo`` reports every change of the table to
poll(2) (``POLLPRI``), and lists every mount point.
"""

from __future__ import annotations

import os
import re
import select
import weakref
from pathlib import Path

_MOUNTINFO = "/proc/self/mountinfo"
_ESCAPED = re.compile(rb"\\([0-7]{3})")  # the kernel writes space, tab, newline, \ as \ooo


class MountTable:
    """One look-out on the table; its owner calls every method under one lock."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self._parents: frozenset[bytes] | None = None
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

    def holds_mount_point(self, dir_fd: int) -> bool:
        """Whether a name in the folder open on ``dir_fd`` is a mount point (or cannot be told)."""
        try:
            folder = os.fsencode(Path(f"/proc/self/fd/{dir_fd}").readlink())
            if self._parents is None:
                self._parents = _mount_point_folders()
        except OSError:
            return True
        return folder in self._parents


def _mount_point_folders() -> frozenset[bytes]:
    lines = Path(_MOUNTINFO).read_bytes().splitlines()
    folders = set()
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:
            point = _ESCAPED.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
            if point != b"/":
                folders.add(point.rpartition(b"/")[0] or b"/")
    return frozenset(folders)
