"""Files a requester names, opened only as far as the requester itself could open them (Linux).

The gateway reads a requester's script, its virtual environment's ``pyvenv.cfg`` and its user
site to describe it. It does so with its own privileges: as root in same-user tests, and in
dedicated mode as an account holding CAP_DAC_READ_SEARCH. Opening a path straight from the
requester's command line would make the approval card an oracle for any file on the system
(``python3 - /etc/shadow`` would show the digest of /etc/shadow, and whether it exists).

So each path is walked one component at a time from the requester's own root, working folder or
descriptor, with ``O_PATH | O_NOFOLLOW`` (nothing is opened for reading on the way), and each
step is allowed only if the requester's credentials from ``/proc/PID/status`` (fsuid, fsgid,
supplementary groups, and its capabilities when it is in the gateway's user namespace) pass the
permission bits: search on every folder, read on the file. Symbolic links are followed by their
text, inside the requester's root. A file or folder with an access ACL is treated as closed to
anyone but its owner, since its mode bits no longer tell the whole answer. ``setfsuid`` was not
used: it needs CAP_SETUID, which the dedicated account does not hold, and cannot take on the
requester's supplementary groups.

The answer is the same (None) for a file that does not exist and one the requester may not read,
so a card never tells the two apart.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

_CAP_DAC_OVERRIDE = 1
_CAP_DAC_READ_SEARCH = 2
_MAX_LINKS = 40
_MAY_READ = 4
_MAY_SEARCH = 1


@dataclass(frozen=True)
class PeerCredentials:
    """What the kernel checks when the requester opens a file."""

    fsuid: int
    fsgid: int
    groups: frozenset[int]
    dac_override: bool = False
    dac_read_search: bool = False

    @classmethod
    def of(cls, base: Path) -> PeerCredentials:
        """The credentials of the process at ``base`` (``/proc/PID``)."""
        fields: dict[str, list[str]] = {}
        with open(base / "status", "rb") as handle:
            for raw in handle:
                key, _, value = raw.decode("ascii", "replace").partition(":")
                fields[key] = value.split()
        caps = int(fields.get("CapEff", ["0"])[0], 16)
        # Capabilities held in a user namespace of its own (`unshare -r`) do not reach files of
        # the gateway's namespace; only a requester in ours is given them.
        if not _same_user_namespace(base):
            caps = 0
        return cls(
            fsuid=int(fields["Uid"][3]),
            fsgid=int(fields["Gid"][3]),
            groups=frozenset(int(g) for g in fields.get("Groups", [])),
            dac_override=bool(caps >> _CAP_DAC_OVERRIDE & 1),
            dac_read_search=bool(caps >> _CAP_DAC_READ_SEARCH & 1),
        )

    def may(self, st: os.stat_result, want: int, *, has_acl: bool) -> bool:
        """Whether these credentials pass ``want`` (read 4, search 1) on a file with ``st``."""
        if self.dac_override or self.dac_read_search:
            return True  # both pass read and search, the only checks made here
        if st.st_uid == self.fsuid:
            bits = st.st_mode >> 6
        elif has_acl:
            return False
        elif st.st_gid == self.fsgid or st.st_gid in self.groups:
            bits = st.st_mode >> 3
        else:
            bits = st.st_mode
        return bits & want == want


class PeerFiles:
    """Paths as the process at ``base`` names them, opened only if it could open them itself."""

    def __init__(self, base: Path, credentials: PeerCredentials | None = None) -> None:
        self.base = base
        self.credentials = credentials or PeerCredentials.of(base)
        self._proc_dev = Path("/proc").stat().st_dev

    def open_file(self, path: str) -> int | None:
        """A descriptor open for reading on the regular file ``path`` names for the peer, or
        None (missing, unreadable for the peer, not a regular file, in /proc)."""
        handle = self._walk(path, want=_MAY_READ)
        if handle is None:
            return None
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                return None  # a pipe or device: reading it would steal or disturb its data
            return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
        except OSError:
            return None
        finally:
            os.close(handle)

    def list_folder(self, path: str) -> list[str] | None:
        """The entries of the folder ``path``, if the peer may read it."""
        handle = self._walk(path, want=_MAY_READ | _MAY_SEARCH)
        if handle is None:
            return None
        try:
            if not stat.S_ISDIR(os.fstat(handle).st_mode):
                return None
            fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        finally:
            os.close(handle)
        try:
            return os.listdir(fd)
        except OSError:
            return None
        finally:
            os.close(fd)

    def read_text(self, path: str, limit: int = 64 * 1024) -> str | None:
        fd = self.open_file(path)
        if fd is None:
            return None
        try:
            return os.read(fd, limit).decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            os.close(fd)

    def stat(self, path: str) -> os.stat_result | None:
        """Owner and mode of what ``path`` names for the peer (links followed), if it can
        reach it."""
        handle = self._walk(path, want=0)
        if handle is None:
            return None
        try:
            return os.fstat(handle)
        finally:
            os.close(handle)

    def real_path(self, path: str) -> str:
        """``path`` with its links resolved as the peer resolves them (``os.path.realpath``:
        a missing last part is kept as written); as written when the peer's root is not ours."""
        parent, _, name = path.rstrip("/").rpartition("/")
        for known, rest in ((path, ""), (parent or "/", name)):
            handle = self._walk(known, want=0)
            if handle is None:
                continue
            try:
                if (self.base / "root").readlink() != Path("/"):
                    break
                real = str(Path(f"/proc/self/fd/{handle}").readlink())
            except OSError:
                break
            finally:
                os.close(handle)
            return f"{real.rstrip('/')}/{rest}" if rest else real
        return os.path.normpath(path)

    def exists(self, path: str) -> bool:
        """Whether ``path`` names something the peer can reach (search on every folder)."""
        handle = self._walk(path, want=0)
        if handle is None:
            return False
        os.close(handle)
        return True

    def _walk(self, path: str, *, want: int) -> int | None:
        """An O_PATH descriptor on what ``path`` names for the peer, every folder on the way
        searchable and the last step passing ``want`` for its credentials."""
        start, rest = self._start(path)
        if start is None:
            return None
        try:
            return self._resolve(start, rest, want)
        except OSError:
            return None

    def _start(self, path: str) -> tuple[int | None, str]:
        """Where the lookup starts (an O_PATH descriptor) and the rest of the path."""
        root_alias = ("/proc/self/root", "/proc/thread-self/root")
        cwd_alias = ("/proc/self/cwd", "/proc/thread-self/cwd")
        fd_alias = ("/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
        streams = {"/dev/stdin": "0", "/dev/stdout": "1", "/dev/stderr": "2"}
        for alias in root_alias:
            if path == alias or path.startswith(alias + "/"):
                return self._anchor("root"), path[len(alias) :]
        for alias in cwd_alias:
            if path == alias or path.startswith(alias + "/"):
                return self._anchor("cwd"), path[len(alias) :].lstrip("/")
        if path in streams:
            return self._descriptor(streams[path]), ""
        for alias in fd_alias:
            if path.startswith(alias):
                number, _, rest = path[len(alias) :].partition("/")
                return (self._descriptor(number), rest) if number.isdigit() else (None, "")
        if path.startswith("/"):
            return self._anchor("root"), path
        return self._anchor("cwd"), path

    def _anchor(self, name: str) -> int | None:
        try:
            return os.open(self.base / name, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None

    def _descriptor(self, number: str) -> int | None:
        """The peer's own descriptor: it holds it, so no folder on its path is checked again,
        but the file itself still is (an O_PATH descriptor opens a file one may not read)."""
        try:
            return os.open(self.base / "fd" / number, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return None

    def _resolve(self, start: int, rest: str, want: int) -> int | None:
        root = self._anchor("root")
        if root is None:
            os.close(start)
            return None
        # folders: the descriptors from the root (or start) down to the current folder, so that
        # `..` climbs back without ever leaving the requester's root.
        folders = [start]
        pending = [part for part in rest.split("/") if part not in ("", ".")]
        links = 0
        try:
            if rest.startswith("/"):
                folders = [os.dup(root)]
                os.close(start)
            while pending:
                part = pending.pop(0)
                current = folders[-1]
                st = os.fstat(current)
                if not stat.S_ISDIR(st.st_mode) or not self._may(current, st, _MAY_SEARCH):
                    return None
                if part == "..":
                    if len(folders) > 1:
                        os.close(folders.pop())
                    continue
                child = os.open(part, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
                child_st = os.fstat(child)
                if child_st.st_dev == self._proc_dev:
                    os.close(child)
                    return None  # /proc's links are the kernel's, not text to follow
                if stat.S_ISLNK(child_st.st_mode):
                    links += 1
                    target = os.readlink(part, dir_fd=current)
                    os.close(child)
                    if links > _MAX_LINKS:
                        return None
                    pending[:0] = [p for p in target.split("/") if p not in ("", ".")]
                    if target.startswith("/"):
                        for fd in folders:
                            os.close(fd)
                        folders = [os.dup(root)]
                    continue
                folders.append(child)
            last = folders[-1]
            if want and not self._may(last, os.fstat(last), want):
                return None
            return os.dup(last)
        finally:
            for fd in folders:
                os.close(fd)
            os.close(root)

    def _may(self, fd: int, st: os.stat_result, want: int) -> bool:
        return self.credentials.may(st, want, has_acl=_has_access_acl(fd))


def _has_access_acl(fd: int) -> bool:
    try:
        os.getxattr(f"/proc/self/fd/{fd}", "system.posix_acl_access")
    except OSError as exc:
        return exc.errno not in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)
    return True


def _same_user_namespace(base: Path) -> bool:
    with contextlib.suppress(OSError):
        return (base / "ns" / "user").readlink() == Path("/proc/self/ns/user").readlink()
    return False
