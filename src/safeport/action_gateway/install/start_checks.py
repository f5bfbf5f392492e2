"""Start checks for a gateway that runs as its own OS account (dedicated-account mode).

The point of the mode is that nothing running as a human's uid can reach what the gateway
holds. That is only true if every piece the gateway trusts is out of that uid's reach: the
account's folders (vault, journals, sockets), and the code the gateway imports. A venv the human
can write to would hand the human (and so an agent with the human's shell) code execution as
the gateway account at its next start, so that is refused here rather than merely documented.

To tell who is asking, the gateway reads other users' ``/proc/PID/exe`` (which needs
CAP_SYS_PTRACE), their ``/proc/PID/environ`` (mode 0400) and the scripts their interpreters run
(often in 0700 home folders), which need CAP_DAC_READ_SEARCH. The service unit grants exactly
these two; the gateway hands them to a forked inspector process at start and drops them itself
(``identity/inspector.py``), because CAP_SYS_PTRACE would also let it write into any process.
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

from safeport.action_gateway.install.code_check import code_write_problem
from safeport.errors import EnvironmentProblem
from safeport.shared.install_file import DedicatedInstall
from safeport.shared.paths import SafeportPaths, ensure_owned_dir

STATE_MODE = 0o750  # humans of the account's group may read the journals, never write
AUDIT_MODE = 0o750
CACHE_MODE = 0o700
RUN_MODE = 0o750  # the account and its group (the named humans) reach the sockets; no one else


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
    # The interpreter itself and the libpython it loads (a venv only links to them).
    base = getattr(sys, "_base_executable", sys.executable)
    roots.add(Path(os.path.realpath(base)))
    for lib in (Path(sys.base_prefix) / "lib").glob("libpython*"):
        roots.add(Path(os.path.realpath(lib)))
    return sorted(roots)
