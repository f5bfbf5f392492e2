"""The description of a dedicated-account install: which account runs the gateway, and where.

`sp gateway install` (as root) writes it to ``/etc/safeport/install.toml``, owned by root and
readable by everyone. Both sides read it: the gateway learns the human uids it admits and the
folders it owns; `sp` and the context server learn where the sockets are and which uid must be
serving them. It is the anchor of the mode: a user's own settings could be rewritten by an agent
running as that user, a root-owned file cannot, so a file that anyone but root can write is
refused.

``SAFEPORT_GATEWAY=/path/to/install.toml`` names another one (an install under ``--prefix``).
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from safeport.errors import ConfigError, EnvironmentProblem, Error

DEFAULT_INSTALL_FILE = Path("/etc/safeport/install.toml")
ENV_VARIABLE = "SAFEPORT_GATEWAY"
_ACCOUNT_RE = re.compile(r"[a-z_][a-z0-9_-]{0,30}")
_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class DedicatedInstall:
    """Where a gateway running as its own account keeps things, and whom it serves."""

    source: Path
    account: str
    uid: int
    gid: int
    state_dir: Path
    run_dir: Path
    humans: tuple[int, ...]

    @property
    def audit_dir(self) -> Path:
        return self.state_dir / "audit"

    @property
    def cache_dir(self) -> Path:
        return self.state_dir / "cache"


def render_install(install: DedicatedInstall, human_names: Mapping[int, str]) -> str:
    """The file's text (the inverse of :func:`parse_install`); names are comments only."""
    humans = ", ".join(str(uid) for uid in install.humans)
    names = ", ".join(human_names.get(uid, "?") for uid in install.humans)
    return (
        "# Written by `sp gateway install`; change it with that command, not by hand.\n"
        f'account = "{install.account}"\n'
        f"uid = {install.uid}\n"
        f"gid = {install.gid}\n"
        f"state_dir = {_toml_string(install.state_dir)}\n"
        f"run_dir = {_toml_string(install.run_dir)}\n"
        f"humans = [{humans}]  # {names}\n"
    )


def parse_install(text: str, source: Path) -> DedicatedInstall:
    """Parse the file's text; every problem is a :class:`ConfigError` naming the file."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from None
    expected = {"account", "uid", "gid", "state_dir", "run_dir", "humans"}
    unknown = sorted(set(data) - expected)
    missing = sorted(expected - set(data))
    if unknown or missing:
        what = "unknown keys " + ", ".join(unknown) if unknown else "no " + ", ".join(missing)
        raise ConfigError(f"{source} has {what}", hint="run `sp gateway install` again")
    account, uid, gid = data["account"], data["uid"], data["gid"]
    if not isinstance(account, str) or not _ACCOUNT_RE.fullmatch(account):
        raise ConfigError(f"{source}: account must be a system account name")
    for name, value in (("uid", uid), ("gid", gid)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
            raise ConfigError(f"{source}: {name} must be a positive number (never root's 0)")
    humans = data["humans"]
    if (
        not isinstance(humans, list)
        or not all(isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in humans)
        or not humans
    ):
        raise ConfigError(f"{source}: humans must list at least one uid")
    if uid in humans:
        raise ConfigError(f"{source}: the gateway's own account cannot be one of its humans")
    return DedicatedInstall(
        source=source,
        account=account,
        uid=uid,
        gid=gid,
        state_dir=_absolute(data["state_dir"], "state_dir", source),
        run_dir=_absolute(data["run_dir"], "run_dir", source),
        humans=tuple(sorted(set(humans))),
    )


def install_file_in(env: Mapping[str, str], *, use_default: bool) -> Path | None:
    """Which install file applies (pure but for an existence check of the default path).

    ``SAFEPORT_GATEWAY`` names one explicitly. Without it, ``SAFEPORT_HOME`` means a
    self-contained same-user folder (the demo, tests), and otherwise the default file applies
    whenever root has written it.
    """
    named = env.get(ENV_VARIABLE)
    if named:
        path = Path(named)
        if not path.is_absolute():
            raise EnvironmentProblem(f"{ENV_VARIABLE} must be an absolute path, not {named!r}")
        return path
    if env.get("SAFEPORT_HOME") or not use_default:
        return None
    return DEFAULT_INSTALL_FILE if DEFAULT_INSTALL_FILE.exists() else None


def downgrade_notice(
    env: Mapping[str, str], uid: int, *, default: Path = DEFAULT_INSTALL_FILE
) -> str | None:
    """A warning when ``SAFEPORT_HOME`` turns a named human's `sp` away from the dedicated
    gateway this machine has (its install file at ``default``): one variable (set by an agent
    in a shell's rc file, say) would otherwise switch to a same-user gateway without a word,
    right before a passphrase is typed.
    """
    if not env.get("SAFEPORT_HOME") or env.get(ENV_VARIABLE):
        return None
    if not default.exists():
        return None
    try:
        install = load_install(default)
    except Error:
        return None
    if uid not in install.humans:
        return None
    return (
        f"SAFEPORT_HOME is set, so this uses the same-user gateway in {env['SAFEPORT_HOME']}, "
        f"not the {install.account} account's gateway this machine runs; unset SAFEPORT_HOME "
        "unless you meant that"
    )


def load_install(path: Path) -> DedicatedInstall:
    """Read and check an install file: a regular file that only root can change."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise EnvironmentProblem(
            f"{path} does not exist",
            hint=f"run `sp gateway install` as root, or unset {ENV_VARIABLE}",
        ) from None
    except OSError as exc:
        raise EnvironmentProblem(f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        problem = _anchor_problem(st)
        if problem:
            raise EnvironmentProblem(
                f"{path} {problem}, so an agent could have rewritten it",
                hint="run `sp gateway install` as root to write it again (root-owned, 0644)",
            )
        raw = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > _MAX_BYTES:
        raise ConfigError(f"{path} is too large to be an install file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8") from None
    for parent in path.parents:
        _check_parent(parent)
    return parse_install(text, path)


def _anchor_problem(st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid != 0:
        return "is not owned by root"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _check_parent(folder: Path) -> None:
    """A folder above the file that another user could write lets them swap the file."""
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot inspect {folder}: {exc.strerror}") from None
    sticky = bool(st.st_mode & stat.S_ISVTX)
    if stat.S_ISLNK(st.st_mode) and folder != Path("/"):
        target = folder.resolve()
        _check_parent(target)
        return
    if st.st_uid != 0 or (stat.S_IMODE(st.st_mode) & 0o022 and not sticky):
        raise EnvironmentProblem(
            f"{folder} can be changed by a user other than root, so the install file under it "
            "could be swapped",
            hint="keep the install file in a folder only root can write (the default is "
            f"{DEFAULT_INSTALL_FILE.parent})",
        )


def _absolute(value: object, name: str, source: Path) -> Path:
    if not isinstance(value, str) or not value.startswith("/") or "\x00" in value:
        raise ConfigError(f"{source}: {name} must be an absolute path")
    return Path(os.path.normpath(value))


def _toml_string(path: Path) -> str:
    text = str(path)
    if any(ch in text for ch in '"\\\n\r\t') or not text.isprintable():
        raise ConfigError(f"{text!r} cannot be written to the install file")
    return f'"{text}"'
