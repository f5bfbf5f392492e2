"""Reading a process through ``/proc``: stat fields, uid, command line, start time, links.

Paths a process names for itself (``/dev/fd/N``, ``/proc/self/…``, a relative path, an absolute
one in its own root) are turned into paths that open *its* file from the gateway, never the
gateway's own.
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import time
from pathlib import Path

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
PROC = Path("/proc")
_CLK_TCK = os.sysconf("SC_CLK_TCK")
# How a process names its own descriptors and folders; in the gateway they would name the
# gateway's. /dev/fd is a link to /proc/self/fd.
_SELF_ALIASES = (
    ("/dev/fd/", "fd"),
    ("/proc/self/", ""),
    ("/proc/thread-self/", ""),
)
_STANDARD_STREAMS = {"/dev/stdin": "0", "/dev/stdout": "1", "/dev/stderr": "2"}


def in_process_view(base: Path, script: str) -> tuple[str, str]:
    """(the path to open from here, the words a card shows) for ``script`` as ``base``'s
    process names it."""
    for alias, inside in _SELF_ALIASES:
        if script == alias.rstrip("/") or script.startswith(alias):
            rest = script[len(alias) :] if script.startswith(alias) else ""
            opened = str(base / inside / rest) if rest else str(base / inside)
            try:
                target = str(Path(opened).readlink())
            except OSError:
                return opened, script
            return opened, f"{script} -> {target}"
    if script in _STANDARD_STREAMS:
        opened = str(base / "fd" / _STANDARD_STREAMS[script])
        try:
            return opened, f"{script} -> {Path(opened).readlink()}"
        except OSError:
            return opened, script
    if script.startswith("/"):
        return str(base / "root") + script, script
    try:
        cwd = (base / "cwd").readlink()
    except OSError:
        return str(base / "cwd" / script), script
    return str(base / "cwd" / script), str(cwd / script)


def last_change(opened: str, fd: int, root: str) -> float:
    """The latest ctime of the opened file and of every symbolic link on the way to it: a
    script rewritten, or a link re-pointed, after its interpreter started is not proof of what
    the interpreter read (folders are not checked: their ctime moves with every new entry)."""
    latest = os.fstat(fd).st_ctime
    path = opened
    for _ in range(40):
        try:
            st = os.lstat(path)
        except OSError:
            break
        if not stat.S_ISLNK(st.st_mode) or _is_proc_link(path):
            break  # /proc/PID/fd/N: a kernel link whose times say nothing about the file
        latest = max(latest, st.st_ctime)
        target = Path(path).readlink()
        # An absolute link target is in the requester's root, not ours.
        path = (
            root + str(target) if target.is_absolute() and root else str(Path(path).parent / target)
        )
    return latest


def _is_proc_link(path: str) -> bool:
    return path.startswith(f"{PROC}/") and path.count("/") <= 4


def started_at(start_ticks: int) -> float:
    """Wall-clock start of a process from its start time in ticks since boot."""
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + start_ticks / _CLK_TCK


def in_our_pid_namespace(pid: int) -> bool:
    try:
        return (PROC / str(pid) / "ns" / "pid").readlink() == Path("/proc/self/ns/pid").readlink()
    except OSError:
        return False  # gone, or hidden: not something to vouch for


def peer_pidfd(sock: socket.socket) -> int | None:
    try:
        fd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:
        return None  # kernels before 6.5: pid + start time re-checks stand alone
    return fd if fd >= 0 else None


def read_proc_file(path: str, limit: int = 64 * 1024) -> bytes:
    """Up to ``limit`` bytes of a ``/proc`` file, read to its end with plain system calls.

    The identity re-check runs twice per proposal: a buffered file object (its buffer, its
    wrapper, its extra calls) cost more than the reads themselves."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, limit)
        while data and len(data) < limit:
            more = os.read(fd, limit - len(data))
            if not more:
                break
            data += more
        return data
    finally:
        os.close(fd)


def stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the pid: comm (without parens), state, ppid, …"""
    # A plain string path: this runs twice per proposal, and pathlib's joins cost more than
    # the read.
    data = read_proc_file(f"/proc/{pid}/stat").decode("utf-8", "replace")
    # comm may contain spaces and parens; it ends at the *last* ')'.
    open_paren = data.index("(")
    close_paren = data.rindex(")")
    comm = data[open_paren + 1 : close_paren]
    rest = data[close_paren + 2 :].split()
    return [comm, *rest[1:]]  # [comm, ppid, pgrp, ...]: field n (1-based) is at index n - 3


def start_time(pid: int) -> int:
    """Field 22 of /proc/PID/stat, read after comm's last ')' (comm may hold any bytes)."""
    data = read_proc_file(f"/proc/{pid}/stat")
    return int(data[data.rindex(b")") + 2 :].split(None, 20)[19])


def status_uid(path: Path) -> int:
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])  # real uid
    raise ProcessLookupError(str(path))


def tracer_pid(path: Path) -> int:
    """The pid tracing the process (``TracerPid`` of its status), 0 when none."""
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"TracerPid:"):
                return int(line.split()[1])
    return 0


def cmdline(base: Path) -> list[str]:
    try:
        with open(base / "cmdline", "rb") as handle:
            raw = handle.read(64 * 1024)
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def fingerprint(pid: int) -> tuple[object, ...]:
    """What changes when the process at ``pid`` is no longer the one we identified."""
    base = f"/proc/{pid}"
    start = start_time(pid)
    try:
        st = os.stat(f"{base}/exe")  # noqa: PTH116 - the hot path: a string, as above
        exe_key: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except PermissionError:
        exe_key = None
    argv_digest = hashlib.sha256(read_proc_file(f"{base}/cmdline")).hexdigest()
    return (start, exe_key, argv_digest)
