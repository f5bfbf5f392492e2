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

Lookups must stay cheap, since identity is taken per connection. The dpkg file lists are read
once (about 0.2 s) into a sorted array of 64-bit path hashes with their owners (12 bytes a file,
1.5 MiB for 125k files), and read again only when dpkg's admin folder changes; a package's
digests and a Python environment's RECORDs are cached the same way, keyed by the modification
time of what they were read from. A hash collision can only name the wrong package, whose digest
list then lacks the path: the file is "not from a package", never a false match. The roots
(dpkg's admin folder, whether rpm is asked) are parameters, so tests can stand up a fake
database; the defaults are the real ones.
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import os
import shutil
import stat
import subprocess
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

PackageStatus = Literal["package", "user-package", "modified", "not-packaged"]
DPKG_ADMIN_DIR = Path("/var/lib/dpkg")
_RPM_DB_DIRS = (Path("/var/lib/rpm"), Path("/usr/lib/sysimage/rpm"))
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
        self, dpkg_admin_dir: Path | None = DPKG_ADMIN_DIR, *, use_rpm: bool = True
    ) -> None:
        self._dpkg = _Dpkg(dpkg_admin_dir) if dpkg_admin_dir is not None else None
        self._rpm = _Rpm() if use_rpm and _Rpm.available() else None
        self._pip = _Pip()

    def origin(self, path: str, digests: FileDigests, st: os.stat_result) -> Origin:
        """``path`` as the system names it; ``digests`` and ``st`` of the file actually opened
        (the mapped executable), so a file replaced on disk is judged by what runs."""
        if path.endswith(" (deleted)") or not path.startswith("/"):
            return NOT_PACKAGED  # what runs is no longer the file at that path
        path = os.path.normpath(path)
        for database in (self._dpkg, self._rpm):
            if database is not None:
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
    def __init__(self, admin_dir: Path) -> None:
        self._info = admin_dir / "info"
        self._lock = threading.Lock()
        self._built_for: int | None = None
        self._hashes = array("q")
        self._owners = array("i")
        self._packages: list[str] = []
        self._md5sums: OrderedDict[str, tuple[int, dict[str, str]]] = OrderedDict()

    def origin(self, path: str, digests: FileDigests) -> Origin | None:
        for name in _aliases(path):
            stem = self._owner(name)
            if stem is None:
                continue
            recorded = self._recorded_md5(stem, name)
            if recorded is None:
                continue  # listed (a folder, a diversion) but no digest: not vouched for
            package = stem.split(":", 1)[0]
            status: PackageStatus = "package" if recorded == digests.md5() else "modified"
            return Origin(status, f"dpkg {package}")
        return None

    def _owner(self, path: str) -> str | None:
        with self._lock:
            self._refresh()
            key = hash(path.encode("utf-8", "surrogateescape"))
            at = bisect.bisect_left(self._hashes, key)
            if at < len(self._hashes) and self._hashes[at] == key:
                return self._packages[self._owners[at]]
        return None

    def _refresh(self) -> None:
        """Read every file list again when dpkg changed its admin folder (it renames new lists
        into place, which changes the folder's mtime)."""
        try:
            version = self._info.stat().st_mtime_ns
        except OSError:
            self._hashes, self._owners, self._packages, self._built_for = (
                array("q"),
                array("i"),
                [],
                None,
            )
            return
        if version == self._built_for:
            return
        keys: list[int] = []
        owners: list[int] = []
        packages: list[str] = []
        with os.scandir(self._info) as entries:
            for entry in entries:
                if not entry.name.endswith(".list"):
                    continue
                try:
                    with open(entry.path, "rb") as handle:
                        lines = [line for line in handle.read().split(b"\n") if line]
                except OSError:
                    continue
                keys.extend(map(hash, lines))
                owners.extend([len(packages)] * len(lines))
                packages.append(entry.name[: -len(".list")])
        order = sorted(range(len(keys)), key=keys.__getitem__)
        self._hashes = array("q", [keys[at] for at in order])
        self._owners = array("i", [owners[at] for at in order])
        self._packages = packages
        self._built_for = version
        self._md5sums.clear()

    def _recorded_md5(self, stem: str, path: str) -> str | None:
        source = self._info / f"{stem}.md5sums"
        try:
            version = source.stat().st_mtime_ns
        except OSError:
            return None
        with self._lock:
            cached = self._md5sums.get(stem)
            if cached is not None and cached[0] == version:
                self._md5sums.move_to_end(stem)
                return cached[1].get(path)
        table: dict[str, str] = {}
        with contextlib.suppress(OSError), open(source, "rb") as handle:
            for line in handle:
                digest, _, name = line.rstrip(b"\n").partition(b"  ")
                if name:
                    table["/" + name.decode("utf-8", "surrogateescape")] = digest.decode(
                        "ascii", "replace"
                    )
        with self._lock:
            self._md5sums[stem] = (version, table)
            while len(self._md5sums) > 64:
                self._md5sums.popitem(last=False)
        return table.get(path)


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
    """pip's RECORD files of the Python environment a file belongs to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sites: OrderedDict[str, tuple[int, dict[str, _Recorded]]] = OrderedDict()

    def origin(self, path: str, digests: FileDigests, st: os.stat_result) -> Origin | None:
        for site in _site_dirs(path):
            recorded = self._index(site).get(path)
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

    def _index(self, site: str) -> dict[str, _Recorded]:
        """Every hashed file of every distribution in ``site``, by absolute path; read again
        when the folder changes (pip adds and removes ``*.dist-info`` folders)."""
        try:
            version = Path(site).stat().st_mtime_ns
        except OSError:
            return {}
        with self._lock:
            cached = self._sites.get(site)
            if cached is not None and cached[0] == version:
                self._sites.move_to_end(site)
                return cached[1]
        table: dict[str, _Recorded] = {}
        for record in Path(site).glob("*.dist-info/RECORD"):
            stem = record.parent.name.removesuffix(".dist-info")
            name, _, dist_version = stem.partition("-")
            with contextlib.suppress(OSError, UnicodeDecodeError):
                for line in record.read_text(encoding="utf-8").splitlines():
                    # path,sha256=…,size; a path with a comma is quoted, and is skipped here.
                    file_name, _, digest = line.rpartition(",")[0].rpartition(",")
                    if not digest.startswith("sha256=") or file_name.startswith('"'):
                        continue
                    full = os.path.normpath(f"{site}/{file_name}")
                    table[full] = _Recorded(
                        name, dist_version, digest[len("sha256=") :], str(record)
                    )
        with self._lock:
            self._sites[site] = (version, table)
            while len(self._sites) > 16:
                self._sites.popitem(last=False)
        return table


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
