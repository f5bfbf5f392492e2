"""Peer identity on Linux: SO_PEERCRED, SO_PEERPIDFD and ``/proc``.

The kernel vouches for the peer's pid and uid at connect time (SO_PEERCRED); from 6.5 it also
hands us a pidfd (SO_PEERPIDFD) that keeps pointing at that exact process, so a reused pid can
never pass for it. Everything else comes from ``/proc``: start time (field 22 of ``stat``),
parent, uid, the executable *as mapped* (``/proc/PID/exe`` still opens the running binary after
the file on disk was replaced) and, for interpreters, the script they run.

Digests are cached by (device, inode, size, mtime_ns, ctime_ns) of the opened executable
(``digest_cache``); reading ``/proc`` is ``linux_proc``, the grammar of interpreters' command
lines ``process_argv``, and what the environment injects ``peer_environment``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import socket
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from safeport.action_gateway.identity.argv import (
    PYTHON_NAME,
    LaunchRole,
    client_label,
    launch_role,
)
from safeport.action_gateway.identity.digests import DigestCache
from safeport.action_gateway.identity.model import (
    EnvironStatus,
    IdentityUnavailable,
    PeerIdentity,
    ProcessInfo,
    SignatureStatus,
    check_unchanged,
    walk_chain,
)
from safeport.action_gateway.identity.package_records import FileDigests, InstalledFiles, Origin
from safeport.action_gateway.identity.peer_environment import bounded, injected_environment
from safeport.action_gateway.identity.peer_files import PeerFiles
from safeport.action_gateway.identity.procfs import (
    PROC,
    cmdline,
    fingerprint,
    in_our_pid_namespace,
    in_process_view,
    last_change,
    peer_pidfd,
    start_time,
    started_at,
    stat_fields,
    status_uid,
    tracer_pid,
)
from safeport.action_gateway.identity.python_startup import python_startup

_UCRED = struct.Struct("3i")
_ORIGIN_TTL_S = 10.0
_CHANGE_MARGIN_S = 0.05  # start times are in ticks (10 ms); leave room for the clock's steps


@dataclass(frozen=True)
class _Checked:
    """One opened file: where it is, its digest and what the package records say of it."""

    path: str
    sha256: str | None
    signature: SignatureStatus
    origin: str | None
    changed_after: float | None = None  # ctime (wall clock) of the file or its link


def _requester_injections(
    base: Path,
    files: PeerFiles,
    exe: str,
    name: str,
    argv: list[str],
    role: LaunchRole,
    uid: int,
) -> tuple[EnvironStatus, tuple[tuple[str, str], ...]]:
    """What changes the requester's program besides its binary and script: variables in its
    environment, a tracer, and for Python the files its startup runs (the requester only: its
    parents' environments change nothing it runs now)."""
    environ_status, injected, variables = injected_environment(base)
    # A tracer can write any code into the requester; one that already detached left no
    # mark (SECURITY.md: a program rule attests the binary, not its memory).
    tracer = tracer_pid(base / "status")
    if tracer:
        injected += (("traced", f"by pid {tracer}"),)
    if role.interpreter and not role.loader and PYTHON_NAME.match(name):
        startup = python_startup(files, exe, name, argv, variables, trusted=_trusted_owners(uid))
        injected += tuple((place, bounded(found)) for place, found in startup)
    return environ_status, injected


def _trusted_owners(requester_uid: int) -> frozenset[int]:
    """Who may own code a requester loads: root and the gateway's own account, never the
    requester's uid (in same-user mode that is the gateway's, and it is the agent's) unless it
    is root, which can change the gateway itself."""
    owners = {0, os.geteuid()}
    if requester_uid != 0:
        owners.discard(requester_uid)
    return frozenset(owners)


class LinuxProbe:
    """:class:`~safeport.action_gateway.identity.model.IdentityProbe` for Linux."""

    def __init__(
        self, cache: DigestCache | None = None, installed: InstalledFiles | None = None
    ) -> None:
        self.cache = cache or DigestCache()
        self.installed = installed if installed is not None else InstalledFiles()
        self._origins: OrderedDict[tuple[object, ...], tuple[float, Origin]] = OrderedDict()
        self._origins_lock = threading.Lock()
        root = Path("/").stat()
        self._root = (root.st_dev, root.st_ino)

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        pid, uid, gid = _UCRED.unpack(raw)
        if pid <= 0:
            raise IdentityUnavailable("the kernel did not report the peer's process")
        if not in_our_pid_namespace(pid):
            # A process that owns a pid namespace (unshare -Ur --pid, no privilege needed) may
            # put any pid of that namespace in SCM_CREDENTIALS, so the per-message sender check
            # could be told that the connected peer wrote what another process wrote.
            raise IdentityUnavailable(
                "the peer runs in another pid namespace, where the sender of each message "
                "cannot be attested; run the client outside that sandbox"
            )
        pidfd = peer_pidfd(sock)
        try:
            chain = self.chain(pid)
            taken = fingerprint(pid)
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
        return PeerIdentity(uid=uid, gid=gid, chain=chain, pidfd=pidfd, fingerprint=taken)

    def verify(self, identity: PeerIdentity) -> None:
        now = None
        if _pidfd_running(identity):
            with contextlib.suppress(OSError):
                taken = fingerprint(identity.pid)
                # The fingerprint starts with the start time alive() reads: one read of the
                # process's stat serves both (another start time: the pid was reused).
                if taken[0] == identity.process.start_time:
                    now = taken
        check_unchanged(identity, now)

    def alive(self, identity: PeerIdentity) -> bool:
        if not _pidfd_running(identity):
            return False
        try:
            return start_time(identity.pid) == identity.process.start_time
        except OSError:
            return False

    def release(self, identity: PeerIdentity) -> None:
        if identity.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(identity.pidfd)

    def chain(self, pid: int) -> tuple[ProcessInfo, ...]:
        """The process and its parents. The environment is read for the first only: it is the
        requester, whose program the variables would change."""
        return walk_chain(pid, lambda current, first: self.process(current, environ=first))

    def process(self, pid: int, *, environ: bool = False) -> tuple[ProcessInfo, int]:
        base = PROC / str(pid)
        fields = stat_fields(pid)
        parent = int(fields[1])
        start = int(fields[19])
        uid = status_uid(base / "status")
        same_root = self._same_root(base)
        exe, exe_checked = self._exe(base, same_root)
        name = Path(exe).name if exe.startswith("/") else fields[0]
        name = name.removesuffix(" (deleted)")
        argv = cmdline(base)
        files = PeerFiles(base)
        role = launch_role(name, argv)
        script = role.script
        script_checked: _Checked | None = None
        if script is not None and not script.startswith("-"):
            script_checked = self._script(files, script, same_root)
        environ_status: EnvironStatus = "unsupported"
        injected: tuple[tuple[str, str], ...] = ()
        if environ:
            environ_status, injected = _requester_injections(
                base, files, exe, name, argv, role, uid
            )
        injected += tuple(
            (f"ld.so {option}", bounded(value)) for option, value in role.loader_options
        )
        # Starting a process then reading its status can race with its exit: the start time
        # read again must match, or this is a new process that took the pid.
        if start_time(pid) != start:
            raise ProcessLookupError(pid)
        changed = False
        if script_checked is not None and script_checked.changed_after is not None:
            changed = script_checked.changed_after > started_at(start) + _CHANGE_MARGIN_S
        info = ProcessInfo(
            pid=pid,
            start_time=start,
            uid=uid,
            name=name,
            exe=exe,
            exe_sha256=exe_checked.sha256 if exe_checked else None,
            signature=exe_checked.signature if exe_checked else "unsupported",
            origin=exe_checked.origin if exe_checked else None,
            interpreter=role.interpreter,
            launcher=role.launcher,
            script=script_checked.path if script_checked else script,
            script_sha256=script_checked.sha256 if script_checked else None,
            script_signature=script_checked.signature if script_checked else None,
            script_origin=script_checked.origin if script_checked else None,
            script_changed=changed,
            label=client_label(argv),
            environ=environ_status,
            injected_env=injected,
        )
        return info, parent

    def _exe(self, base: Path, same_root: bool) -> tuple[str, _Checked | None]:
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
            # The exe link names the file in the process's own root; only a process sharing
            # ours can be checked against this system's package records.
            return exe, self._check(fd, exe if same_root else None, exe)
        finally:
            os.close(fd)

    def _script(self, files: PeerFiles, script: str, same_root: bool) -> _Checked:
        """The script as the *requester* opens it: a relative path from its working folder,
        ``/dev/fd/N`` and ``/proc/self/…`` through its own descriptors, an absolute path
        through its root. Resolving any of these in the gateway's context would digest some
        other file (the gateway's fd 3, the gateway's working folder); opening it with the
        gateway's privileges would digest files the requester may not read (``peer_files``)."""
        base = files.base
        opened, shown = in_process_view(base, script)
        unchecked = _Checked(shown, None, "unsupported", None)
        # Only a regular file the requester could read is opened, by a walk that never follows
        # a link the kernel's way, so a link swapped between the check and the read cannot
        # point the read elsewhere. Missing and forbidden look the same.
        fd = files.open_file(script)
        if fd is None:
            return unchecked
        try:
            lookup = None
            if same_root:
                with contextlib.suppress(OSError):
                    real = os.path.realpath(opened)
                    found = Path(real).stat()
                    opened_st = os.fstat(fd)
                    if (found.st_dev, found.st_ino) == (opened_st.st_dev, opened_st.st_ino):
                        lookup = real
            checked = self._check(fd, lookup, shown)
            root = str(base / "root") if script.startswith("/") else ""
            return dataclasses.replace(checked, changed_after=last_change(opened, fd, root))
        except OSError:
            return unchecked
        finally:
            os.close(fd)

    def _check(self, fd: int, lookup: str | None, shown: str) -> _Checked:
        """Digest the opened file and ask the package records about it (``lookup`` is its path
        on this system, or None when it cannot be named here)."""
        sha256 = self.cache.digest_fd(fd)
        if sha256 is None:
            return _Checked(shown, None, "unsupported", None)
        if lookup is None:
            return _Checked(shown, sha256, "not-packaged", None)
        digests = FileDigests(sha256, lambda: self.cache.md5_fd(fd) or "")
        st = os.fstat(fd)
        key = (lookup, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        now = time.monotonic()
        with self._origins_lock:
            cached = self._origins.get(key)
        if cached is not None and now - cached[0] < _ORIGIN_TTL_S:
            origin = cached[1]
        else:
            origin = self.installed.origin(lookup, digests, st)
            with self._origins_lock:
                self._origins[key] = (now, origin)
                while len(self._origins) > 512:
                    self._origins.popitem(last=False)
        return _Checked(shown, sha256, origin.status, origin.source)

    def _same_root(self, base: Path) -> bool:
        try:
            st = (base / "root").stat()
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._root


def _pidfd_running(identity: PeerIdentity) -> bool:
    """False once the peer's pidfd says its process exited (True without a pidfd: the start
    time is then what tells)."""
    if identity.pidfd is None:
        return True
    # A pidfd polls readable once its process has exited (poll, unlike select, has no limit on
    # descriptor numbers).
    poller = select.poll()
    poller.register(identity.pidfd, select.POLLIN)
    try:
        return not poller.poll(0)
    except OSError:
        return False
