"""Before root acts on the system for an install: it runs as root, on code only root can change,
under a prefix whose every folder only root can change. Each refusal says what to do instead.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from safeport.action_gateway.install.code_check import code_write_problem
from safeport.action_gateway.install.start_checks import code_roots
from safeport.errors import EnvironmentProblem


def require_root() -> None:
    """Creating an account, its folders and a service is root's work; say so before a step."""
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "creating the gateway's account and folders needs root",
            hint="run it with sudo, or add --print to see every step without doing it",
        )


def check_code_is_root_owned(roots: Sequence[Path] | None = None) -> None:
    """The gateway will run this installation's code as its account: refuse code a user could
    change (a venv in a home folder), which would hand that user the account."""
    problem = code_write_problem(code_roots() if roots is None else roots, trusted={0})
    if problem:
        raise EnvironmentProblem(
            f"the gateway would run code another user can change: {problem}",
            hint="install safeport where only root can write (for example "
            "`sudo python3 -m venv /opt/safeport && sudo /opt/safeport/bin/pip install …`) "
            "and run `sudo /opt/safeport/bin/sp gateway install` from there",
        )


def check_prefix(prefix: Path) -> None:
    """Every folder from / down to the prefix must be root's and closed to others: root will
    create, chown and chmod beneath it, and a user who can rename entries there could point
    those steps at files of their choosing."""
    for folder in [prefix, *prefix.parents]:
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            continue
        sticky = bool(st.st_mode & 0o1000)
        linked = stat.S_ISLNK(st.st_mode)
        if st.st_uid != 0 or (st.st_mode & 0o022 and not sticky) or linked:
            raise EnvironmentProblem(
                f"{folder} is not a folder only root can change; refusing to install under it",
                hint="choose a --prefix whose every folder is root's (the default is /)",
            )
