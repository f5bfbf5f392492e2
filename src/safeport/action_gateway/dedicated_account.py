"""Start checks for a gateway that runs as its own OS account (dedicated-account mode).

The point of the mode is that nothing running as a human's uid can reach what the gateway
holds. That is only true if every piece the gateway trusts is out of that uid's reach: the
account's folders (vault, journals, sockets), and the code the gateway imports. A venv the human
can write to would hand the human (and so an agent with the human's shell) code execution as
the gateway account at its next start, so that is refused here rather than merely documented.

To tell who is asking, the gateway reads other users' ``/proc/PID/exe`` (which needs
CAP_SYS_PTRACE), their ``/proc/PID/environ`` (mode 0400) and the scripts their interpreters run
(often in 0700 home folders), which need CAP_DAC_READ_SEARCH. The service unit grants exactly
these two, both read-only in effect. Without them every peer would be refused, so the gateway
says so at start instead.
"""

from __future__ import annotations

import os
import pwd
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from safeport.errors import EnvironmentProblem
from safeport.shared.install_file import DedicatedInstall
from safeport.shared.paths import SafeportPaths, ensure_owned_dir

CAP_DAC_READ_SEARCH = 2
CAP_SYS_PTRACE = 19
STATE_MODE = 0o750  # humans of the account's group may read the journals, never write
AUDIT_MODE = 0o750
CACHE_MODE = 0o700
RUN_MODE = 0o755  # anyone may reach the sockets; the gateway admits only the named uids
MAX_CODE_ENTRIES = 200_000


def prepare_account_folders(paths: SafeportPaths) -> DedicatedInstall:
    """Every dedicated-mode start check that touches the disk; returns the install."""
    install = require_account(paths)
    ensure_owned_dir(install.state_dir, mode=STATE_MODE)
    ensure_owned_dir(install.audit_dir, mode=AUDIT_MODE)
    ensure_owned_dir(install.cache_dir, mode=CACHE_MODE)
    ensure_owned_dir(install.run_dir, mode=RUN_MODE)
    problem = code_write_problem(code_roots(), trusted={0, install.uid})
    if problem:
        raise EnvironmentProblem(
            f"the gateway's code can be changed by another user: {problem}",
            hint="install safeport where only root can write (for example "
            "`python3 -m venv /opt/safeport && /opt/safeport/bin/pip install …` as root), "
            "then run `sp gateway install` from there",
        )
    missing = [
        name
        for bit, name in (
            (CAP_SYS_PTRACE, "CAP_SYS_PTRACE"),
            (CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH"),
        )
        if not has_capability(bit)
    ]
    if sys.platform.startswith("linux") and missing:
        raise EnvironmentProblem(
            f"the gateway cannot inspect other users' processes (it lacks {', '.join(missing)}), "
            "so it could not tell who is asking",
            hint="start it from the unit `sp gateway install` wrote, or with `setpriv "
            "--inh-caps +sys_ptrace,+dac_read_search --ambient-caps +sys_ptrace,+dac_read_search`",
        )
    return install


def require_account(paths: SafeportPaths) -> DedicatedInstall:
    """The install, if this process runs as its account; a clear refusal otherwise."""
    install = paths.install
    if install is None:
        raise EnvironmentProblem("this gateway has no dedicated-account install")
    uid = os.geteuid()
    if uid != install.uid:
        raise EnvironmentProblem(
            f"{install.source} says the gateway runs as {install.account} (uid {install.uid}), "
            f"but this process runs as uid {uid}",
            hint="start it as that account: `sudo systemctl start safeport-gateway`, or unset "
            "SAFEPORT_GATEWAY to run a same-user gateway",
        )
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        entry = None
    if entry is None or entry.pw_name != install.account:
        # A deleted and re-created account, or a uid reused by another: the folders and the
        # humans' trust were set up for the one the install made.
        raise EnvironmentProblem(
            f"uid {uid} is not the account {install.account} that {install.source} names",
            hint="run `sp gateway install` again as root",
        )
    return install


def code_roots() -> list[Path]:
    """Folders whose files this interpreter may import or run: the interpreter's prefixes,
    every existing ``sys.path`` entry, and the folder safeport itself was loaded from."""
    import safeport

    roots = {Path(sys.prefix), Path(sys.exec_prefix), Path(safeport.__file__).resolve().parent}
    for entry in sys.path:
        if entry and Path(entry).is_dir():
            roots.add(Path(entry))
    return sorted(roots)


def code_write_problem(roots: Iterable[Path], *, trusted: set[int]) -> str | None:
    """The first file or folder under (or above) ``roots`` that an untrusted uid could change.

    A path is safe when its owner is trusted and neither group nor others may write it; a
    folder above it that others may write is safe only with the sticky bit (``/tmp``), which
    stops them replacing entries they do not own.
    """
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


def has_capability(bit: int, status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process holds capability ``bit`` in its effective set (Linux)."""
    try:
        text = status.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def _path_problem(path: Path, trusted: set[int], *, allow_sticky: bool) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be inspected ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        # A link's own bits mean nothing; who may replace it is its folder's business, and its
        # target is checked where it is a root or walked (sys.path holds resolved folders).
        return None if st.st_uid in trusted else f"{path} is a link owned by uid {st.st_uid}"
    if st.st_uid not in trusted:
        return f"{path} is owned by uid {st.st_uid}"
    writable = stat.S_IMODE(st.st_mode) & 0o022
    if writable and not (allow_sticky and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (writable by group or others)"
    return None


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in dirs:
            yield base / name
        for name in files:
            yield base / name
