"""Peer identity on Linux: SO_PEERCRED, SO_PEERPIDFD and ``/proc``.

The kernel vouches for the peer's pid and uid at connect time (SO_PEERCRED); from 6.5 it also
hands us a pidfd (SO_PEERPIDFD) that keeps pointing at that exact process, so a reused pid can
never pass for it. Everything else comes from ``/proc``: start time (field 22 of ``stat``),
parent, uid, the executable *as mapped* (``/proc/PID/exe`` still opens the running binary after
the file on disk was replaced) and, for interpreters, the script they run.

Digests are cached by (device, inode, size, mtime_ns, ctime_ns) of the opened executable, so a
client binary is hashed once, and a binary rewritten in place (new mtime/ctime) is hashed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import socket
import stat
import struct
import threading
from collections import OrderedDict
from pathlib import Path

from safeport.action_gateway.identity import (
    MAX_CHAIN,
    IdentityChanged,
    IdentityUnavailable,
    PeerIdentity,
    ProcessInfo,
    is_interpreter,
    is_launcher,
)

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
_UCRED = struct.Struct("3i")
_MAX_HASHED_BYTES = 512 * 1024 * 1024
_PROC = Path("/proc")
# Options of common interpreters that take the next argv element as their value.
_OPTION_WITH_VALUE = {"-W", "-X", "-Q", "-r", "--require", "--import", "--loader", "-o", "-O"}


class DigestCache:
    """SHA-256 of files, keyed by the identity and change times of the opened file."""

    def __init__(self, size: int = 256) -> None:
        self._entries: OrderedDict[tuple[int, ...], str] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def digest_fd(self, fd: int) -> str | None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_HASHED_BYTES:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        digest = hashlib.sha256()
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


class LinuxProbe:
    """:class:`~safeport.action_gateway.identity.IdentityProbe` for Linux."""

    def __init__(self, cache: DigestCache | None = None) -> None:
        self.cache = cache or DigestCache()

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        pid, uid, gid = _UCRED.unpack(raw)
        if pid <= 0:
            raise IdentityUnavailable("the kernel did not report the peer's process")
        pidfd = _peer_pidfd(sock)
        try:
            chain = self.chain(pid)
            fingerprint = _fingerprint(pid)
        except OSError as exc:
            if pidfd is not None:
                os.close(pidfd)
            raise IdentityUnavailable("the peer process could not be inspected") from exc
        if chain[0].uid != uid and uid != 0:
            # The process behind the pid is not the one that connected (it exited and the pid was
            # reused between the connect and our look at /proc).
            if pidfd is not None:
                os.close(pidfd)
            raise IdentityUnavailable("the peer process changed while it was being identified")
        return PeerIdentity(uid=uid, gid=gid, chain=chain, pidfd=pidfd, fingerprint=fingerprint)

    def verify(self, identity: PeerIdentity) -> None:
        if not self.alive(identity):
            raise IdentityChanged("the requesting process has exited")
        try:
            now = _fingerprint(identity.pid)
        except OSError:
            raise IdentityChanged("the requesting process has exited") from None
        if now != identity.fingerprint:
            raise IdentityChanged("the requesting process is not the one that connected")

    def alive(self, identity: PeerIdentity) -> bool:
        if identity.pidfd is not None:
            # A pidfd polls readable once its process has exited (poll, unlike select, has no
            # limit on descriptor numbers).
            poller = select.poll()
            poller.register(identity.pidfd, select.POLLIN)
            try:
                if poller.poll(0):
                    return False
            except OSError:
                return False
        try:
            return _start_time(identity.pid) == identity.process.start_time
        except OSError:
            return False

    def release(self, identity: PeerIdentity) -> None:
        if identity.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(identity.pidfd)

    def chain(self, pid: int) -> tuple[ProcessInfo, ...]:
        """The process and its parents, at most 16, stopping below pid 1."""
        procs: list[ProcessInfo] = []
        current = pid
        while current > 0 and len(procs) < MAX_CHAIN:
            try:
                info, parent = self.process(current)
            except OSError:
                if not procs:
                    raise
                break  # a parent that exited meanwhile ends the chain
            procs.append(info)
            if current == 1:
                break
            current = parent
        return tuple(procs)

    def process(self, pid: int) -> tuple[ProcessInfo, int]:
        base = _PROC / str(pid)
        fields = _stat_fields(pid)
        parent = int(fields[1])
        start = int(fields[19])
        uid = _status_uid(base / "status")
        exe, exe_sha = self._exe(base)
        name = Path(exe).name if exe.startswith("/") else fields[0]
        name = name.removesuffix(" (deleted)")
        argv = _cmdline(base)
        interpreter = is_interpreter(name)
        launcher = is_launcher(name) or (interpreter and _runs_launcher(argv))
        script = script_sha = None
        if interpreter:
            script = script_argument(argv)
            if script is not None and not script.startswith("-"):
                script, script_sha = self._script(base, script)
        # Starting a process then reading its status can race with its exit: the start time
        # read again must match, or this is a new process that took the pid.
        if _start_time(pid) != start:
            raise ProcessLookupError(pid)
        info = ProcessInfo(
            pid=pid,
            start_time=start,
            uid=uid,
            name=name,
            exe=exe,
            exe_sha256=exe_sha,
            interpreter=interpreter,
            launcher=launcher,
            script=script,
            script_sha256=script_sha,
        )
        return info, parent

    def _exe(self, base: Path) -> tuple[str, str | None]:
        try:
            exe = str((base / "exe").readlink())
        except PermissionError:
            return "<unreadable>", None  # a non-dumpable or foreign process hides its binary
        except FileNotFoundError:
            return "<kernel thread>", None
        try:
            fd = os.open(base / "exe", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return exe, None
        try:
            return exe, self.cache.digest_fd(fd)
        finally:
            os.close(fd)

    def _script(self, base: Path, script: str) -> tuple[str, str | None]:
        path = Path(script)
        if not path.is_absolute():
            try:
                path = (base / "cwd").readlink() / path
            except OSError:
                return script, None
        return str(path), self.cache.digest_path(str(path))


def script_argument(argv: list[str]) -> str | None:
    """The script an interpreter runs: its first operand, or ``-c``/``-m module``/``-e``."""
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg in ("-c", "-e", "--eval", "-p", "--print"):
            return "-c"
        if arg == "-m" and index + 1 < len(argv):
            return f"-m {argv[index + 1]}"
        if arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            return f"-m {arg[2:]}"
        if arg == "--":
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg in _OPTION_WITH_VALUE:
            index += 2
            continue
        if not arg.startswith("-"):
            return arg
        index += 1
    return None


def _runs_launcher(argv: list[str]) -> bool:
    """`node …/npx-cli.js`, `python …/bin/uv` and the like launch the next program."""
    script = script_argument(argv)
    if script is None or script.startswith("-"):
        return False
    stem = Path(script).name.split(".")[0].removesuffix("-cli")
    return is_launcher(stem)


def _peer_pidfd(sock: socket.socket) -> int | None:
    try:
        fd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:
        return None  # kernels before 6.5: pid + start time re-checks stand alone
    return fd if fd >= 0 else None


def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the pid: comm (without parens), state, ppid, …"""
    with open(_PROC / str(pid) / "stat", "rb") as handle:
        data = handle.read().decode("utf-8", "replace")
    # comm may contain spaces and parens; it ends at the *last* ')'.
    open_paren = data.index("(")
    close_paren = data.rindex(")")
    comm = data[open_paren + 1 : close_paren]
    rest = data[close_paren + 2 :].split()
    return [comm, *rest[1:]]  # [comm, ppid, pgrp, ...]: field n (1-based) is at index n - 3


def _start_time(pid: int) -> int:
    return int(_stat_fields(pid)[19])


def _status_uid(path: Path) -> int:
    with open(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])  # real uid
    raise ProcessLookupError(str(path))


def _cmdline(base: Path) -> list[str]:
    try:
        with open(base / "cmdline", "rb") as handle:
            raw = handle.read(64 * 1024)
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def _fingerprint(pid: int) -> tuple[object, ...]:
    """What changes when the process at ``pid`` is no longer the one we identified."""
    base = _PROC / str(pid)
    start = _start_time(pid)
    try:
        st = (base / "exe").stat()
        exe_key: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except PermissionError:
        exe_key = None
    with open(base / "cmdline", "rb") as handle:
        cmdline = hashlib.sha256(handle.read(64 * 1024)).hexdigest()
    return (start, exe_key, cmdline)
