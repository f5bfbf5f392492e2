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
import dataclasses
import hashlib
import os
import re
import select
import socket
import stat
import struct
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from safeport.action_gateway.environment import injected_entries, parse_environ
from safeport.action_gateway.identity import (
    MAX_CHAIN,
    EnvironStatus,
    IdentityChanged,
    IdentityUnavailable,
    PeerIdentity,
    ProcessInfo,
    SignatureStatus,
    is_interpreter,
    is_launcher,
    is_shell,
)
from safeport.action_gateway.installed_files import FileDigests, InstalledFiles, Origin
from safeport.action_gateway.peer_files import PeerFiles

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)
_UCRED = struct.Struct("3i")
_MAX_HASHED_BYTES = 512 * 1024 * 1024
_PROC = Path("/proc")
_MAX_ENVIRON_BYTES = 1024 * 1024
_MAX_SHOWN_VALUE = 200
_ORIGIN_TTL_S = 10.0
_CHANGE_MARGIN_S = 0.05  # start times are in ticks (10 ms); leave room for the clock's steps
_CLK_TCK = os.sysconf("SC_CLK_TCK")
# How a process names its own descriptors and folders; in the gateway they would name the
# gateway's. /dev/fd is a link to /proc/self/fd.
_SELF_ALIASES = (
    ("/dev/fd/", "fd"),
    ("/proc/self/", ""),
    ("/proc/thread-self/", ""),
)
_STANDARD_STREAMS = {"/dev/stdin": "0", "/dev/stdout": "1", "/dev/stderr": "2"}
# The dynamic loader run as a program (`ld.so /tmp/tool`): the loader is a packaged file, but
# what runs is its operand, so it is treated as an interpreter whose script is that program.
_LOADER = re.compile(
    r"^(ld-linux[-\w.]*\.so(\.\d+)*|ld\.so|ld-musl-[\w.]+\.so(\.\d+)*|ld64\.so\.\d+)$"
)
_LOADER_INJECTING = {"--preload", "--audit", "--library-path", "--glibc-hwcaps-prepend"}
_LOADER_OPTIONS_WITH_VALUE = _LOADER_INJECTING | {
    "--argv0",
    "--inhibit-rpath",
    "--glibc-hwcaps-mask",
}


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


@dataclass(frozen=True)
class _Checked:
    """One opened file: where it is, its digest and what the package records say of it."""

    path: str
    sha256: str | None
    signature: SignatureStatus
    origin: str | None
    changed_after: float | None = None  # ctime (wall clock) of the file or its link


class LinuxProbe:
    """:class:`~safeport.action_gateway.identity.IdentityProbe` for Linux."""

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
        if not _in_our_pid_namespace(pid):
            # A process that owns a pid namespace (unshare -Ur --pid, no privilege needed) may
            # put any pid of that namespace in SCM_CREDENTIALS, so the per-message sender check
            # could be told that the connected peer wrote what another process wrote.
            raise IdentityUnavailable(
                "the peer runs in another pid namespace, where the sender of each message "
                "cannot be attested; run the client outside that sandbox"
            )
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
        """The process and its parents, at most 16, stopping below pid 1. The environment is
        read for the first only: it is the requester, whose program the variables would change."""
        procs: list[ProcessInfo] = []
        current = pid
        while current > 0 and len(procs) < MAX_CHAIN:
            try:
                info, parent = self.process(current, environ=not procs)
            except OSError:
                if not procs:
                    raise
                break  # a parent that exited meanwhile ends the chain
            procs.append(info)
            if current == 1:
                break
            current = parent
        return tuple(procs)

    def process(self, pid: int, *, environ: bool = False) -> tuple[ProcessInfo, int]:
        base = _PROC / str(pid)
        fields = _stat_fields(pid)
        parent = int(fields[1])
        start = int(fields[19])
        uid = _status_uid(base / "status")
        same_root = self._same_root(base)
        exe, exe_checked = self._exe(base, same_root)
        name = Path(exe).name if exe.startswith("/") else fields[0]
        name = name.removesuffix(" (deleted)")
        argv = _cmdline(base)
        files = PeerFiles(base)
        loader = bool(_LOADER.match(name))
        interpreter = is_interpreter(name) or loader
        launcher = is_launcher(name) or (interpreter and not loader and _runs_launcher(argv))
        script = None
        script_checked: _Checked | None = None
        loader_options: list[tuple[str, str]] = []
        if interpreter:
            if loader:
                script, loader_options = _loader_program(argv)
            else:
                script = script_argument(argv)
            if script is not None and not script.startswith("-"):
                script_checked = self._script(files, script, same_root)
        environ_status: EnvironStatus = "unsupported"
        injected: tuple[tuple[str, str], ...] = ()
        if environ:
            environ_status, injected, variables = _injected_environment(base)
            if interpreter and not loader and _PYTHON_NAME.match(name):
                injected += _python_user_site(files, name, argv, variables)
        injected += tuple((f"ld.so {option}", _bounded(value)) for option, value in loader_options)
        # Starting a process then reading its status can race with its exit: the start time
        # read again must match, or this is a new process that took the pid.
        if _start_time(pid) != start:
            raise ProcessLookupError(pid)
        changed = False
        if script_checked is not None and script_checked.changed_after is not None:
            changed = script_checked.changed_after > _started_at(start) + _CHANGE_MARGIN_S
        info = ProcessInfo(
            pid=pid,
            start_time=start,
            uid=uid,
            name=name,
            exe=exe,
            exe_sha256=exe_checked.sha256 if exe_checked else None,
            signature=exe_checked.signature if exe_checked else "unsupported",
            origin=exe_checked.origin if exe_checked else None,
            interpreter=interpreter,
            launcher=launcher,
            script=script_checked.path if script_checked else script,
            script_sha256=script_checked.sha256 if script_checked else None,
            script_signature=script_checked.signature if script_checked else None,
            script_origin=script_checked.origin if script_checked else None,
            script_changed=changed,
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
        opened, shown = _in_process_view(base, script)
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
            return dataclasses.replace(checked, changed_after=_last_change(opened, fd, root))
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


def _in_process_view(base: Path, script: str) -> tuple[str, str]:
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


def _injected_environment(
    base: Path,
) -> tuple[EnvironStatus, tuple[tuple[str, str], ...], dict[str, str]]:
    """The requester's variables that inject code (and all of them, for the checks that need
    one); an environment that cannot be read whole (another uid, a non-dumpable process, padded
    past the limit) is "unreadable", which no ``[callers]`` rule by path or digest admits."""
    try:
        with open(base / "environ", "rb") as handle:
            raw = handle.read(_MAX_ENVIRON_BYTES + 1)
    except OSError:
        return "unreadable", (), {}
    if len(raw) > _MAX_ENVIRON_BYTES:
        return "unreadable", (), {}
    pairs = parse_environ(raw)
    found = injected_entries(pairs)
    return "read", tuple((name, _bounded(value)) for name, value in found), dict(pairs)


def _python_user_site(
    files: PeerFiles, name: str, argv: list[str], env: dict[str, str]
) -> tuple[tuple[str, str], ...]:
    """A Python that reads its user site runs every ``*.pth`` line and ``usercustomize`` /
    ``sitecustomize`` found there, before its script: code the agent can write with no variable
    set at all. Flagged like an injecting variable unless ``-I``/``-s``, ``PYTHONNOUSERSITE``
    or a virtual environment turns the user site off."""
    flags = _python_flags(argv)
    if "I" in flags or "s" in flags or (env.get("PYTHONNOUSERSITE") and "E" not in flags):
        return ()
    if _in_isolated_venv(files, argv, env):
        return ()  # a virtual environment leaves the user site out
    version = _PYTHON_NAME.match(name)
    home = env.get("HOME", "")
    userbase = env.get("PYTHONUSERBASE") if "E" not in flags else None
    userbase = userbase or (f"{home}/.local" if home.startswith("/") else "")
    if not version or not version.group(1) or not userbase:
        return ()
    site = f"{userbase}/lib/python{version.group(1)}/site-packages"
    # Listed as the requester would list it: a folder it cannot read is not its user site's
    # problem, and must not become a way to list someone else's.
    entries = files.list_folder(site)
    if entries is None:
        return ()
    names = sorted(
        entry
        for entry in entries
        if entry.endswith(".pth") or entry in ("usercustomize.py", "sitecustomize.py")
    )
    if not names:
        return ()
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (("python user site", _bounded(f"{site}: {shown}")),)


def _in_isolated_venv(files: PeerFiles, argv: list[str], env: dict[str, str]) -> bool:
    """Whether the interpreter started as a virtual environment's (``pyvenv.cfg`` beside the
    program named by argv[0], as Python itself looks) without the system site packages."""
    program = argv[0] if argv else ""
    if "/" not in program:
        found = [f"{d}/{program}" for d in env.get("PATH", "").split(":") if d.startswith("/")]
        program = next((c for c in found if files.exists(c)), "")
    elif not program.startswith("/"):
        try:
            program = f"{(files.base / 'cwd').readlink()}/{program}"
        except OSError:
            return False
    if not program:
        return False
    folder = Path(program).parent
    for cfg in (folder / "pyvenv.cfg", folder.parent / "pyvenv.cfg"):
        text = files.read_text(str(cfg))
        if text is None:
            continue
        settings = {
            key.strip().lower(): value.strip().lower()
            for key, _, value in (line.partition("=") for line in text.splitlines())
        }
        return settings.get("include-system-site-packages", "false") != "true"
    return False


def _python_flags(argv: list[str]) -> set[str]:
    """The single-letter options before the script, ``-m`` or ``-c``."""
    flags: set[str] = set()
    for arg in argv[1:]:
        if not arg.startswith("-") or arg == "-" or arg.startswith("--"):
            break
        letters = arg[1:]
        for letter in letters:
            if letter in "mcWX":
                return flags | {letter}
            flags.add(letter)
    return flags


def _bounded(value: str) -> str:
    if len(value) <= _MAX_SHOWN_VALUE:
        return value
    return f"{value[:_MAX_SHOWN_VALUE]}… ({len(value) - _MAX_SHOWN_VALUE} more characters)"


def _last_change(opened: str, fd: int, root: str) -> float:
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
    return path.startswith(f"{_PROC}/") and path.count("/") <= 4


def _started_at(start_ticks: int) -> float:
    """Wall-clock start of a process from its start time in ticks since boot."""
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + start_ticks / _CLK_TCK


def script_argument(argv: list[str]) -> str | None:
    """What an interpreter runs: its script file, ``-`` for a program read from standard input,
    ``-c`` for code on the command line (``-c``/``-e``/``-r`` …) or ``-m module``; None when no
    operand names one (an interactive interpreter reads its program from standard input too).

    Only a file operand can be vouched for, so the parse follows each family's own grammar:
    options that take a value (``-W ignore``, ``-I dir``), letters combined in one word (``-Ic``,
    ``-we``), ``--``, and ``-`` (standard input, never the next operand)."""
    family = _family(Path(argv[0]).name if argv else "")
    code, stdin, valued = _CODE_OPTIONS[family], _STDIN_OPTIONS[family], _VALUE_OPTIONS[family]
    attached_only = _ATTACHED_ONLY.get(family, set())
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "-":
            return "-"
        if arg == "--":
            return argv[index + 1] if index + 1 < len(argv) else None
        if arg.startswith("--"):
            name, equals, _ = arg[1:].partition("=")
            if name in code:
                return "-c"
            index += 2 if name in valued and not equals else 1
            continue
        if not arg.startswith("-") and not (family == "shell" and arg.startswith("+")):
            return arg
        letters = arg[1:]
        for position, letter in enumerate(letters):
            rest = letters[position + 1 :]
            if letter in code:
                return "-c"
            if letter in stdin:
                return "-"
            if family == "python" and letter == "m":
                module = rest or (argv[index + 1] if index + 1 < len(argv) else "")
                return f"-m {module}" if module else None
            if letter in valued or arg[0] + letter in valued:
                if not rest and letter not in attached_only:
                    index += 1  # the value is the next element
                break
        index += 1
    return None


_Family = Literal["python", "node", "shell", "perl", "ruby", "php"]
# Per family: options that run code given on the command line, options that read the program
# from standard input, and options that take a value (the rest of their word, or else the next
# element). Names of long options keep one dash (``-require`` for ``--require``).
_CODE_OPTIONS: dict[_Family, set[str]] = {
    "python": {"c"},
    "node": {"e", "p", "-eval", "-print"},
    "shell": {"c"},
    "perl": {"e", "E"},
    "ruby": {"e"},
    "php": {"r", "B", "R", "F", "E"},
}
_STDIN_OPTIONS: dict[_Family, set[str]] = {
    "python": set(),
    "node": set(),
    "shell": {"s"},
    "perl": set(),
    "ruby": set(),
    "php": set(),
}
_VALUE_OPTIONS: dict[_Family, set[str]] = {
    "python": {"W", "X", "Q", "-check-hash-based-pycs"},
    "node": {
        "r", "-require", "-import", "-loader", "-experimental-loader", "C", "-conditions",
        "-input-type", "-title", "-env-file", "-cpu-prof-dir", "-cpu-prof-name",
        "-diagnostic-dir", "-disable-warning", "-heap-prof-dir", "-heap-prof-name",
        "-heapsnapshot-signal", "-icu-data-dir", "-inspect-port", "-debug-port",
        "-openssl-config", "-redirect-warnings", "-report-dir", "-report-directory",
        "-report-filename", "-report-signal", "-secure-heap", "-secure-heap-min",
        "-tls-cipher-list", "-tls-keylog", "-unhandled-rejections", "-use-largepages",
        "-watch-path", "-dns-result-order", "-trace-event-categories",
        "-trace-event-file-pattern", "-experimental-policy", "-policy-integrity",
        "-es-module-specifier-resolution", "-max-http-header-size", "-stack-trace-limit",
    },
    "shell": {"o", "O", "+o", "+O", "-rcfile", "-init-file"},
    "perl": {"I", "M", "m", "x", "i", "0", "l", "C", "d", "D"},
    "ruby": {"I", "r", "C", "E", "F", "x", "0", "K", "W", "T"},
    "php": {"c", "d", "z", "t"},
}  # fmt: skip
# Values these take only in the same word (`-Mstrict`, `-i.bak`, `-0777`): an element after a
# bare one is the script, not its value.
_ATTACHED_ONLY: dict[_Family, set[str]] = {
    "perl": {"m", "x", "i", "0", "l", "C", "d", "D"},
    "ruby": {"x", "0", "K", "W", "T"},
}


def _family(name: str) -> _Family:
    if name.startswith(("node", "deno", "bun")):
        return "node"
    if is_shell(name):
        return "shell"
    if name.startswith("perl"):
        return "perl"
    if name.startswith("ruby"):
        return "ruby"
    if name.startswith("php"):
        return "php"
    return "python"


def _loader_program(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """``ld.so [options] PROGRAM``: the program it runs, and the options that put other code
    into it (``--preload``, ``--audit``, ``--library-path``, which act like LD_PRELOAD …)."""
    injected: list[tuple[str, str]] = []
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            return (argv[index + 1] if index + 1 < len(argv) else None), injected
        option, equals, value = arg.partition("=")
        if option in _LOADER_OPTIONS_WITH_VALUE:
            if not equals:
                value = argv[index + 1] if index + 1 < len(argv) else ""
                index += 1
            if option in _LOADER_INJECTING:
                injected.append((option, value))
            index += 1
            continue
        if not arg.startswith("-"):
            return arg, injected
        index += 1
    return None, injected


def _runs_launcher(argv: list[str]) -> bool:
    """`node …/npx-cli.js`, `python …/bin/uv`, `python -m pipx` and the like launch the next
    program."""
    script = script_argument(argv)
    if script is None or script == "-c":
        return False
    if script.startswith("-m "):
        return is_launcher(script[3:].split(".")[0])
    stem = Path(script).name.split(".")[0].removesuffix("-cli")
    return is_launcher(stem)


def _in_our_pid_namespace(pid: int) -> bool:
    try:
        return (_PROC / str(pid) / "ns" / "pid").readlink() == Path("/proc/self/ns/pid").readlink()
    except OSError:
        return False  # gone, or hidden: not something to vouch for


_PYTHON_NAME = re.compile(r"^python(\d+\.\d+)?[a-z]*$")


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
