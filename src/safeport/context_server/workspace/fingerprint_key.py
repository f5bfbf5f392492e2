"""The key that fingerprints secret values (``shared.secret_scan.fingerprints``).

32 random bytes in safeport's own data folder, never in a workspace: created 0600 the first time
a fingerprint is asked for (``sp context scan``, ``sp context allow``), and only read after
that. A key another user could read, or one that is a link, is refused: whoever holds the key
can test a guess of an allowed value against its fingerprint.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from safeport.errors import ConfigError
from safeport.shared.paths import SafeportPaths, ensure_private_dir
from safeport.shared.secret_scan import KEY_BYTES


def key_path(paths: SafeportPaths) -> Path:
    return paths.data_dir / "fingerprint.key"


def load_key(paths: SafeportPaths, *, create: bool) -> bytes | None:
    """The key; None if there is none yet and ``create`` is false."""
    path = key_path(paths)
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return None
    ensure_private_dir(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return _read(path)  # another process made it first: theirs is the key
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    return _read(path)


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ConfigError(
            f"cannot read the fingerprint key {path}: {exc.strerror}",
            hint="it must be a regular file of yours (not a link); remove it to make a new "
            "one, then allow each value back again",
        ) from None
    try:
        st = os.fstat(fd)
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise ConfigError(
            f"the fingerprint key {path} is not a private file of yours",
            hint=f"chmod 600 {path} (owned by you)",
        )
    if len(data) != KEY_BYTES:
        raise ConfigError(
            f"the fingerprint key {path} is not {KEY_BYTES} bytes",
            hint="remove it to make a new one, then allow each value back again",
        )
    return data
