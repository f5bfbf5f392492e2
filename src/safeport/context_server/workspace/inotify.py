"""inotify(7) through libc: an instance's descriptor, its watches and its events.

Linux only; elsewhere, or where the user's instance limit is reached, :func:`open_instance`
returns None and callers do without events. The instance's owner closes its descriptor once,
after every thread that reads or adds watches on it has stopped.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
import sys

log = logging.getLogger(__name__)

# <sys/inotify.h>
IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
# Everything that changes what a folder's entries are or say: names, sizes, types, modes,
# link counts (changed through this folder's names), and the folder itself going away.
FOLDER_CHANGES = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_EVENT = struct.Struct("iIII")
_READ_BYTES = 1 << 16

Event = tuple[int, int, bytes]  # (watch descriptor, mask, name in the folder or b"")


class AddWatch:
    def __init__(self, libc: ctypes.CDLL) -> None:
        self._call = libc.inotify_add_watch
        self._call.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._call.restype = ctypes.c_int

    def __call__(self, fd: int, path: bytes, mask: int) -> int:
        """The watch descriptor, or minus the errno."""
        wd = int(self._call(fd, path, mask))
        return wd if wd >= 0 else -ctypes.get_errno()


class RemoveWatch:
    def __init__(self, libc: ctypes.CDLL) -> None:
        self._call = libc.inotify_rm_watch
        self._call.argtypes = (ctypes.c_int, ctypes.c_int)
        self._call.restype = ctypes.c_int

    def __call__(self, fd: int, wd: int) -> None:
        # EINVAL: the kernel dropped it already (the folder was deleted); nothing to undo.
        self._call(fd, wd)


def folder_path(dir_fd: int) -> bytes:
    """The path that names the folder open on ``dir_fd`` itself, whatever its name is now."""
    return f"/proc/self/fd/{dir_fd}".encode()


def open_instance() -> tuple[int, AddWatch, RemoveWatch] | None:
    """A new non-blocking instance's descriptor and its calls, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
        init.argtypes = (ctypes.c_int,)
        init.restype = ctypes.c_int
        add, remove = AddWatch(libc), RemoveWatch(libc)
    except (OSError, AttributeError):
        return None
    fd = int(init(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:
        code = ctypes.get_errno()
        log.info("no inotify instance (%s)", errno.errorcode.get(code, code))
        return None
    return fd, add, remove


def read_events(fd: int) -> list[Event] | None:
    """Every event queued on the instance, in order; None when it cannot be read."""
    events: list[Event] = []
    while True:
        try:
            data = os.read(fd, _READ_BYTES)
        except BlockingIOError:
            return events
        except OSError as exc:
            log.warning("inotify instance unreadable (%s)", type(exc).__name__)
            return None
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            start = offset + _EVENT.size
            events.append((wd, mask, data[start : start + length].rstrip(b"\0")))
            offset = start + length
