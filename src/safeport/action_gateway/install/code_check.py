"""Whether the code a gateway would run can be changed by anyone but root and its own account.

This file imports only the standard library, on purpose: `sp gateway install` copies it to
``/etc/safeport/check_code.py`` and the service runs it *before* the gateway, as
``/usr/bin/python3.X -I -S /etc/safeport/check_code.py ROOT…``. A check made inside the
gateway comes too late: by then ``site`` has run every ``.pth`` file in site-packages, and one
planted there by a user who can write the venv would already be running as the account (and
could have disabled the check). ``-S`` loads no site-packages, ``-I`` no environment, no user
site and no working folder, and the checker itself sits in a root-owned folder.

Exit status 0 when every path is safe, 1 with the first problem on stderr otherwise.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

MAX_CODE_ENTRIES = 200_000


def code_write_problem(roots: Iterable[Path], *, trusted: set[int]) -> str | None:
    """The first file or folder under (or above) ``roots`` that an untrusted uid could change.

    A path is safe when its owner is trusted and neither group nor others may write it; a
    folder above a root that others may write is safe only with the sticky bit (``/tmp``),
    which stops them replacing entries they do not own.
    """
    roots = list(roots)
    seen: set[Path] = set()
    for root in roots:
        for folder in [root, *root.parents]:
            if folder in seen:
                continue
            seen.add(folder)
            problem = _path_problem(folder, trusted, allow_sticky=folder != root)
            if problem:
                return problem
    count = 0
    for root in roots:
        for path in _walk(root):
            count += 1
            if count > MAX_CODE_ENTRIES:
                return f"over {MAX_CODE_ENTRIES} files to check under {root}"
            problem = _path_problem(path, trusted, allow_sticky=False)
            if problem:
                return problem
    return None


def _path_problem(path: Path, trusted: set[int], *, allow_sticky: bool) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        # A link's own bits mean nothing (who may replace it is its folder's business), but
        # whatever it points at is run as if it were here: Debian's sitecustomize.py is a link
        # into /etc, and a root-owned link to a user's file would hand that user the gateway.
        if st.st_uid not in trusted:
            return f"{path} is a link owned by uid {st.st_uid}"
        return _target_problem(path, trusted)
    if st.st_uid not in trusted:
        return f"{path} is owned by uid {st.st_uid}"
    writable = stat.S_IMODE(st.st_mode) & 0o022
    if writable and not (allow_sticky and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (writable by group or others)"
    return None


def _target_problem(link: Path, trusted: set[int]) -> str | None:
    target = Path(os.path.realpath(link))
    for place in [target, *target.parents]:
        problem = _path_problem(place, trusted, allow_sticky=place != target)
        if problem:
            return f"{link} leads to {target}, and {problem}"
    return None


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in dirs:
            yield base / name
        for name in files:
            yield base / name


def main(argv: list[str]) -> int:
    """``check_code.py ROOT…``: trusted owners are root and the uid running the check."""
    if not argv or any(not arg.startswith("/") for arg in argv):
        print("usage: check_code.py /absolute/root …", file=sys.stderr)
        return 2
    problem = code_write_problem([Path(arg) for arg in argv], trusted={0, os.geteuid()})
    if problem:
        print(
            f"safeport: refusing to start the gateway, its code can be changed by another user: "
            f"{problem}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
