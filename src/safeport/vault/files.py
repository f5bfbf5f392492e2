"""Reading and replacing the vault's files safely: no symlinks, our own files only, 0600,
atomic replacement (temp file, fsync, rename, fsync folder) and one writer at a time (flock).

A crash at any point of :func:`replace_atomically` leaves either the old file or the new one
under the final name (rename is atomic on POSIX); a stray temp file may remain and is removed
by the next save.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from safeport.errors import EnvironmentProblem
from safeport.shared.folder_sync import fsync_dir
from safeport.vault.errors import UnsafeVaultFile

MAX_VAULT_BYTES = 64 * 1024 * 1024
_TEMP_MARK = ".tmp-"


class VaultMissing(EnvironmentProblem):
    """There is no vault file yet."""


def read_private_file(
    path: Path,
    *,
    what: str,
    allow_readable: bool = False,
    owner: int | None = None,
    max_bytes: int = MAX_VAULT_BYTES,
) -> bytes:
    """Read a file that must be a regular, single-link file we own, never through a symlink.

    ``allow_readable`` admits 0644 (the public key file); nothing may be writable by others,
    including the folder (whoever can write it can rename an old copy over the file). The file
    is opened relative to the folder checked, and non-blocking so that a FIFO or device planted
    under the name is refused by the fstat check instead of hanging the open. A file over
    ``max_bytes`` is refused as it is read.
    """
    uid = os.geteuid() if owner is None else owner
    folder = _open_folder(path, what=what, owner=uid)
    try:
        fd = os.open(
            path.name,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY,
            dir_fd=folder,
        )
    except FileNotFoundError as exc:
        raise VaultMissing(f"no {what} at {path}", hint="run `sp vault init` first") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeVaultFile(
                f"{what} {path} is a symbolic link; refusing to follow it",
                hint="replace the link with the file itself",
            ) from exc
        raise EnvironmentProblem(f"cannot read {what} {path}: {exc.strerror}") from exc
    finally:
        os.close(folder)
    try:
        problem = file_problem(os.fstat(fd), uid, allow_readable=allow_readable)
        if problem:
            mode_only = problem.startswith("has mode")
            raise UnsafeVaultFile(
                f"{what} {path} {problem}; refusing to use it",
                hint=f"run `chmod {'644' if allow_readable else '600'} {path}` if it is yours"
                if mode_only
                else "check who put it there; restore the real file from a backup",
            )
        chunks = []
        total = 0
        while chunk := os.read(fd, 1024 * 1024):
            total += len(chunk)
            if total > max_bytes:
                raise UnsafeVaultFile(f"{what} {path} is larger than any vault can be")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read {what} {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)


def _open_folder(path: Path, *, what: str, owner: int | None = None) -> int:
    """A descriptor of ``path``'s folder, refused if anyone but its owner can write to it."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise VaultMissing(f"no {what} at {path}", hint="run `sp vault init` first") from exc
    except OSError as exc:
        why = exc.strerror
        raise EnvironmentProblem(f"cannot open the folder of {what} {path}: {why}") from exc
    problem = folder_problem(os.fstat(folder), os.geteuid() if owner is None else owner)
    if problem:
        os.close(folder)
        raise UnsafeVaultFile(
            f"the folder {path.parent} of {what} {path} {problem}; refusing to use it",
            hint=f"run `chmod go-w {path.parent}` if it is yours",
        )
    return folder


def folder_problem(st: os.stat_result, uid: int) -> str | None:
    """Why a folder's fstat lets someone else swap files inside it, or None (pure)."""
    if st.st_uid not in (uid, 0):
        return "is owned by another user"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        return f"is writable by other users (mode {mode:04o})"
    return None


def file_problem(st: os.stat_result, uid: int, *, allow_readable: bool = False) -> str | None:
    """Why a file's fstat makes it unsafe to trust, or None (pure)."""
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_nlink != 1:
        return f"has {st.st_nlink} hard links"
    if st.st_uid != uid:
        return "is owned by another user"
    if mode & (0o022 if allow_readable else 0o077):
        return f"has mode {mode:04o}, not {'0644' if allow_readable else '0600'}"
    return None


def replace_atomically(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write ``data`` to a temp file beside ``path``, fsync it, rename it over, fsync the folder."""
    _refuse_symlink(path)
    temp = path.with_name(f".{path.name}{_TEMP_MARK}{secrets.token_hex(8)}")
    try:
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
        )
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write beside {path}: {exc.strerror}") from exc
    try:
        try:
            os.fchmod(fd, mode)  # the umask may have narrowed it; never widened
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}") from exc
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> None:
    """Remove temp files a crashed save left beside ``path`` (call only under the file lock)."""
    prefix = f".{path.name}{_TEMP_MARK}"
    with contextlib.suppress(OSError):
        for name in os.listdir(path.parent):
            if name.startswith(prefix):
                with contextlib.suppress(OSError):
                    (path.parent / name).unlink()


def create_exclusive(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Write a new file that must not exist yet (a backup), then fsync it and its folder."""
    try:
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode
        )
    except FileExistsError as exc:
        raise EnvironmentProblem(
            f"{path} already exists", hint="choose a new file name; nothing was overwritten"
        ) from exc
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {path}: {exc.strerror}") from exc
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}") from exc
    os.close(fd)
    fsync_dir(path.parent)


def _refuse_symlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise UnsafeVaultFile(f"{path} is a symbolic link; refusing to replace it")


class FileLock:
    """An exclusive flock on ``.NAME.lock`` beside a file; re-entrant within one process.

    flock belongs to an open file description, so a second ``open``+``flock`` in the same
    process would wait on itself; one descriptor and a depth count avoid that.
    """

    def __init__(self, path: Path) -> None:
        self.path = path.with_name(f".{path.name}.lock")
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd = -1

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._mutex:
            if self._depth == 0:
                self._fd = self._open()
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
                except OSError:
                    os.close(self._fd)
                    raise
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    os.close(self._fd)  # closing releases the flock
                    self._fd = -1

    def _open(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise UnsafeVaultFile(f"cannot open the vault lock {self.path} ({why})") from exc
        problem = file_problem(os.fstat(fd), os.geteuid())
        if problem:
            os.close(fd)
            raise UnsafeVaultFile(f"vault lock {self.path} {problem}; refusing to use it")
        return fd
