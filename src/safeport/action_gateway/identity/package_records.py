"""Whether a file is what a package manager installed: Linux's answer to a code signature (§7).

Linux has no signature on a binary, but the system records what it installed: dpkg keeps each
package's file list (``info/PKG.list``) and MD5 digests (``info/PKG.md5sums``), rpm keeps digests
in its database, and pip writes a ``RECORD`` (SHA-256) for every file of a distribution, including
the scripts it puts in a virtual environment's ``bin``. A process's executable (and an
interpreter's script) is checked against the first of these that claims the file:

- ``package``: a package claims it and its digest is the recorded one;
- ``user-package``: the same, but the record (or the file) can be rewritten by a non-root user,
  so the match proves only consistency — an agent running as that user could change both;
- ``modified``: a package claims it and the digest differs ("MODIFIED since installed");
- ``not-packaged``: no package claims it.

Lookups must stay cheap, since identity is taken per connection, and must not grow the gateway:
each new path costs one substring search over dpkg's file lists (about 20 ms) or over one
environment's RECORDs, and only the answers are kept, until dpkg's admin folder or the site
folder changes (the probe also caches each file's answer by its identity for a few seconds).
The roots (dpkg's admin folder, whether rpm is asked) are parameters, so tests can stand up a
fake database; the defaults are the real ones.
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

PackageStatus = Literal["package", "user-package", "modified", "not-packaged"]
DPKG_ADMIN_DIR = Path("/var/lib/dpkg")
_RPM_DB_DIRS = (Path("/var/lib/rpm"), Path("/usr/lib/sysimage/rpm"))
# Folders no system package installs into: a path there skips dpkg and rpm (an answer of "not
# from a package" is the strict one), which keeps users' scripts from costing a search.
USER_FOLDERS = ("/tmp/", "/var/tmp/", "/home/", "/root/", "/run/", "/proc/", "/dev/")  # noqa: S108
# usrmerge: /bin is /usr/bin, but dpkg may list either spelling.
_MERGED = ("/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/")


@dataclass(frozen=True)
class FileDigests:
    """Digests of one opened file. MD5 (all dpkg records) is slower than SHA-256 and needed only
    for a file dpkg claims, so it is computed on demand."""

    sha256: str
    md5: Callable[[], str] = field(compare=False)


@dataclass(frozen=True)
class Origin:
    """What the system's package records say about one file."""

    status: PackageStatus
    source: str | None = None  # "dpkg python3.11-minimal", "pip safeport 0.1.0"


NOT_PACKAGED = Origin("not-packaged")


class InstalledFiles:
    """Answers "which package installed this file, and is it unchanged?" for Linux."""

    def __init__(
        self,
        dpkg_admin_dir: Path | None = DPKG_ADMIN_DIR,
        *,
        use_rpm: bool = True,
        user_folders: tuple[str, ...] = USER_FOLDERS,
    ) -> None:
        self._user_folders = user_folders
        self._dpkg = _Dpkg(dpkg_admin_dir) if dpkg_admin_dir is not None else None
        self._rpm = _Rpm() if use_rpm and _Rpm.available() else None
        self._pip = _Pip()

    def origin(self, path: str, digests: FileDigests, st: os.stat_result) -> Origin:
        """``path`` as the system names it; ``digests`` and ``st`` of the file actually opened
        (the mapped executable), so a file replaced on disk is judged by what runs."""
        if path.endswith(" (deleted)") or not path.startswith("/"):
            return NOT_PACKAGED  # what runs is no longer the file at that path
        path = os.path.normpath(path)
        system_path = not path.startswith(self._user_folders)
        for database in (self._dpkg, self._rpm):
            if database is not None and system_path:
                found = database.origin(path, digests)
                if found is not None:
                    return found
        return self._pip.origin(path, digests, st) or NOT_PACKAGED


def _aliases(path: str) -> list[str]:
    names = [path]
    if path.startswith("/usr/") and path[4:].startswith(_MERGED):
        names.append(path[4:])
    elif path.startswith(_MERGED):
        names.append("/usr" + path)
    return names


class _Dpkg:
    """dpkg's records, searched per path: each new path costs one pass over the file lists (a
    substring search, about 20 ms for 125k files), and the answer is kept until dpkg changes its
    admin folder (it renames new lists into place, which changes the folder's mtime). Nothing of
    the lists is kept in memory."""

    def __init__(self, admin_dir: Path) -> None:
        self._info = admin_dir / "info"
        self._lock = threading.Lock()
        self._version: int | None = None
        self._owners: OrderedDict[str, tuple[str, str] | None] = OrderedDict()

    def origin(self, path: str, digests: FileDigests) -> Origin | None:
        found = self._owner(path)
        if found is None:
            return None
        stem, listed = found
        recorded = self._recorded_md5(stem, listed)
        if recorded is None:
            return None  # listed (a folder, a diversion) but no digest: not vouched for
        package = stem.split(":", 1)[0]
        status: PackageStatus = "package" if recorded == digests.md5() else "modified"
        return Origin(status, f"dpkg {package}")

    def _owner(self, path: str) -> tuple[str, str] | None:
        """(the list's stem, the spelling it lists) for the package that installed ``path``."""
        try:
            version = self._info.stat().st_mtime_ns
        except OSError:
            return None
        with self._lock:
            if version != self._version:
                self._owners.clear()
                self._version = version
            if path in self._owners:
                self._owners.move_to_end(path)
                return self._owners[path]
        found = self._search(_aliases(path))
        with self._lock:
            self._owners[path] = found
            while len(self._owners) > 1024:
                self._owners.popitem(last=False)
        return found

    def _search(self, names: list[str]) -> tuple[str, str] | None:
        needles = [
            (b"\n" + name.encode("utf-8", "surrogateescape") + b"\n", name) for name in names
        ]
        with os.scandir(self._info) as entries:
            for entry in entries:
                if not entry.name.endswith(".list"):
                    continue
                try:
                    with open(entry.path, "rb") as handle:
                        data = b"\n" + handle.read() + b"\n"
                except OSError:
                    continue
                for needle, name in needles:
                    if needle in data:
                        return entry.name[: -len(".list")], name
        return None

    def _recorded_md5(self, stem: str, path: str) -> str | None:
        target = path.lstrip("/").encode("utf-8", "surrogateescape")
        try:
            data = (self._info / f"{stem}.md5sums").read_bytes()
        except OSError:
            return None
        for line in data.split(b"\n"):
            digest, _, name = line.partition(b"  ")
            if name == target:
                return digest.decode("ascii", "replace")
        return None


class _Rpm:
    """rpm's database through the ``rpm`` command (its format is private); one query per new
    file, cached by path and the file's digest."""

    _ALGORITHMS: ClassVar[dict[str, str]] = {"1": "md5", "8": "sha256"}

    def __init__(self) -> None:
        self._rpm = shutil.which("rpm") or "rpm"
        self._cache: OrderedDict[tuple[str, str], Origin | None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        return shutil.which("rpm") is not None and any(d.is_dir() for d in _RPM_DB_DIRS)

    def origin(self, path: str, digests: FileDigests) -> Origin | None:
        key = (path, digests.sha256)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        found = self._query(path, digests)
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > 256:
                self._cache.popitem(last=False)
        return found

    def _query(self, path: str, digests: FileDigests) -> Origin | None:
        fmt = "[%{NAME} %{VERSION}-%{RELEASE}\t%{FILEDIGESTALGO}\t%{FILEDIGESTS}\t%{FILENAMES}\n]"
        try:
            done = subprocess.run(
                [self._rpm, "-qf", "--qf", fmt, "--", path],
                capture_output=True,
                timeout=5,
                check=False,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            parts = line.split("\t")
            if len(parts) != 4 or parts[3] != path or not parts[2]:
                continue
            algorithm = self._ALGORITHMS.get(parts[1])
            if algorithm is None:
                return None
            actual = digests.sha256 if algorithm == "sha256" else digests.md5()
            status: PackageStatus = "package" if parts[2] == actual else "modified"
            return Origin(status, f"rpm {parts[0]}")
        return None


@dataclass(frozen=True)
class _Recorded:
    distribution: str
    version: str
    sha256_b64: str
    record: str


class _Pip:
    """pip's RECORD files of the Python environment a file belongs to, searched per path (one
    pass over the environment's RECORDs for a new path), the answer kept until the site folder
    changes (pip adds and removes ``*.dist-info`` folders)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: OrderedDict[tuple[str, str], tuple[int, _Recorded | None]] = OrderedDict()

    def origin(self, path: str, digests: FileDigests, st: os.stat_result) -> Origin | None:
        for site in _site_dirs(path):
            recorded = self._lookup(site, path)
            if recorded is None:
                continue
            source = f"pip {recorded.distribution} {recorded.version}"
            actual = base64.urlsafe_b64encode(bytes.fromhex(digests.sha256)).rstrip(b"=")
            if actual.decode("ascii") != recorded.sha256_b64:
                return Origin("modified", source)
            if _user_writable(st) or _record_user_writable(recorded.record):
                return Origin("user-package", source)
            return Origin("package", source)
        return None

    def _lookup(self, site: str, path: str) -> _Recorded | None:
        try:
            version = Path(site).stat().st_mtime_ns
        except OSError:
            return None
        key = (site, path)
        with self._lock:
            cached = self._found.get(key)
            if cached is not None and cached[0] == version:
                self._found.move_to_end(key)
                return cached[1]
        found = _search_records(site, path)
        with self._lock:
            self._found[key] = (version, found)
            while len(self._found) > 1024:
                self._found.popitem(last=False)
        return found


def _search_records(site: str, path: str) -> _Recorded | None:
    """The RECORD line naming ``path`` (as ``pkg/mod.py`` or ``../../../bin/tool``)."""
    relative = os.path.relpath(path, site)
    if os.path.normpath(f"{site}/{relative}") != path:
        return None
    needle = b"\n" + relative.encode("utf-8", "surrogateescape") + b","
    for record in Path(site).glob("*.dist-info/RECORD"):
        try:
            data = b"\n" + record.read_bytes()
        except OSError:
            continue
        at = data.find(needle)
        if at < 0:
            continue
        end = data.find(b"\n", at + 1)
        line = data[at + 1 : end if end >= 0 else len(data)].decode("utf-8", "replace")
        digest = line.rpartition(",")[0].rpartition(",")[2]
        if not digest.startswith("sha256="):
            return None  # listed without a digest (RECORD itself, bytecode): not vouched for
        name, _, dist_version = record.parent.name.removesuffix(".dist-info").partition("-")
        return _Recorded(name, dist_version, digest[len("sha256=") :], str(record))
    return None


def _site_dirs(path: str) -> list[str]:
    """The site folders whose RECORDs may name ``path``: the one it sits in, or for a file in
    an environment's ``bin``, that environment's."""
    parts = path.split("/")
    for index, part in enumerate(parts):
        if part in ("site-packages", "dist-packages") and index > 0:
            return ["/".join(parts[: index + 1])]
    parent = Path(path).parent
    if parent.name != "bin":
        return []
    lib = parent.parent / "lib"
    return sorted(
        str(site)
        for pattern in ("python3*/site-packages", "python3*/dist-packages")
        for site in lib.glob(pattern)
    )


def _user_writable(st: os.stat_result) -> bool:
    return st.st_uid != 0 or bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _record_user_writable(record: str) -> bool:
    """A RECORD a user can rewrite (or replace, through its folder) vouches for nothing."""
    path = Path(record)
    try:
        return _user_writable(path.stat()) or _user_writable(path.parent.stat())
    except OSError:
        return True
