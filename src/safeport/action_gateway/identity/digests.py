"""Digests of executables and scripts, cached by the identity and change times of the opened file.

A client binary is hashed once; a binary rewritten in place (new mtime/ctime) is hashed again.
The key comes from ``fstat`` of the descriptor that was read, never from a path looked up again.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict

_MAX_HASHED_BYTES = 512 * 1024 * 1024


class DigestCache:
    """SHA-256 (and, on demand, MD5 for dpkg's records) of files, keyed by the identity and
    change times of the opened file."""

    def __init__(self, size: int = 256) -> None:
        self._entries: OrderedDict[tuple[object, ...], str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def digest_fd(self, fd: int) -> str | None:
        return self._digest(fd, "sha256")

    def md5_fd(self, fd: int) -> str | None:
        return self._digest(fd, "md5")

    def _digest(self, fd: int, algorithm: str) -> str | None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_HASHED_BYTES:
            return None
        key = (algorithm, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        digest = hashlib.new(algorithm, usedforsecurity=algorithm != "md5")
        offset = 0
        while True:
            chunk = os.pread(fd, 1024 * 1024, offset)
            if not chunk:
                break
            digest.update(chunk)
            offset += len(chunk)
        value = digest.hexdigest()
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def digest_path(self, path: str) -> str | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            return self.digest_fd(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
