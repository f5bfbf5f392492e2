"""Where safeport keeps its files, and checks on the folders that must be private.

``locate()`` is pure: it maps an environment and a platform to a :class:`SafeportPaths`. The
checks that touch the disk (``ensure_private_dir``, ``check_socket_path``) are separate so the
decision can be tested without a filesystem.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from safeport.errors import EnvironmentProblem
from safeport.shared.install_file import DedicatedInstall, install_file_in, load_install

# sockaddr_un.sun_path: 108 bytes on Linux, 104 on macOS and the BSDs, both counting the NUL.
_SUN_PATH_MAX = {"linux": 107, "darwin": 103}
_SUN_PATH_DEFAULT = 103


@dataclass(frozen=True)
class SafeportPaths:
    """Every location safeport reads or writes."""

    config_dir: Path
    data_dir: Path
    audit_dir: Path
    cache_dir: Path
    run_dir: Path
    # Dedicated-account mode: the gateway runs as ``install.account``; its sockets and journals
    # are the install's, and only that uid may serve them. None: the gateway runs as this user.
    install: DedicatedInstall | None = None

    @property
    def gateway_uid(self) -> int:
        """The uid that must be behind the sockets (this user's own in same-user mode)."""
        return self.install.uid if self.install is not None else os.geteuid()

    @property
    def dedicated(self) -> bool:
        return self.install is not None

    @property
    def gateway_audit_dir(self) -> Path:
        """Where the gateway's journals (sessions, actions) and its checkpoint are."""
        return self.install.audit_dir if self.install is not None else self.audit_dir

    @property
    def journal_dirs(self) -> tuple[Path, ...]:
        """Every folder holding journals this user may verify: the gateway's, then their own
        (the context server's reads journal stays in the user's own folder in either mode)."""
        if self.gateway_audit_dir == self.audit_dir:
            return (self.audit_dir,)
        return (self.gateway_audit_dir, self.audit_dir)

    @property
    def gateway_config(self) -> Path:
        return self.config_dir / "gateway.toml"

    @property
    def context_config(self) -> Path:
        return self.config_dir / "context.toml"

    @property
    def vault_file(self) -> Path:
        return self.data_dir / "vault.sp"

    @property
    def vault_public_file(self) -> Path:
        return self.data_dir / "vault.pub.json"

    @property
    def agent_socket(self) -> Path:
        return self.run_dir / "agent.sock"

    @property
    def control_socket(self) -> Path:
        return self.run_dir / "control.sock"

    @property
    def revocation_notice(self) -> Path:
        """The value the gateway replaces whenever a remote client's token stops standing."""
        return self.run_dir / "revocations"

    def private_dirs(self) -> tuple[Path, ...]:
        """The folders the context server must treat as private if a served root contains them."""
        own = (self.config_dir, self.data_dir, self.audit_dir, self.cache_dir, self.run_dir)
        if self.install is None:
            return own
        return (*own, self.install.state_dir)


# The variables that choose where safeport keeps its files and finds its gateway. Whatever
# starts safeport on a user's behalf (an MCP client's entry, a service file) must pass each one
# that is set, or that process looks in the default places and finds another home or nothing.
LOCATION_VARIABLES: tuple[str, ...] = ("SAFEPORT_HOME", "SAFEPORT_GATEWAY")


def location_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The location variables set in ``env``, relative paths made absolute."""
    env = os.environ if env is None else env
    return {name: str(Path(env[name]).absolute()) for name in LOCATION_VARIABLES if env.get(name)}


def locate(
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    home: Path | None = None,
    uid: int | None = None,
) -> SafeportPaths:
    """Where this process finds safeport's files and the gateway.

    Same-user mode is :func:`layout` alone. With a dedicated-account install (its file named by
    ``SAFEPORT_GATEWAY``, or ``/etc/safeport/install.toml`` when the real environment is used and
    ``SAFEPORT_HOME`` is not set), the gateway's account sees the install's folders as its own,
    and everyone else keeps their own config, cache and reads journal but finds the gateway's
    sockets and journals where the install put them (``gateway_audit_dir``).
    """
    use_default = env is None
    env = os.environ if env is None else env
    paths = layout(env, platform, home, uid)
    source = install_file_in(env, use_default=use_default)
    if source is None:
        return paths
    install = load_install(source)
    if (os.geteuid() if uid is None else uid) == install.uid:
        return SafeportPaths(
            config_dir=install.state_dir,
            data_dir=install.state_dir,
            audit_dir=install.audit_dir,
            cache_dir=install.cache_dir,
            run_dir=install.run_dir,
            install=install,
        )
    return SafeportPaths(
        config_dir=paths.config_dir,
        data_dir=paths.data_dir,
        audit_dir=paths.audit_dir,
        cache_dir=paths.cache_dir,
        run_dir=install.run_dir,
        install=install,
    )


def layout(
    env: Mapping[str, str],
    platform: str | None = None,
    home: Path | None = None,
    uid: int | None = None,
) -> SafeportPaths:
    """Map an environment to same-user locations (pure: reads nothing from disk)."""
    platform = sys.platform if platform is None else platform
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    uid = os.getuid() if uid is None else uid

    root = env.get("SAFEPORT_HOME")
    if root:
        base = _absolute(root, "SAFEPORT_HOME")
        return SafeportPaths(
            config_dir=base,
            data_dir=base,
            audit_dir=base / "audit",
            cache_dir=base / "cache",
            run_dir=base / "run",
        )
    if platform == "darwin":
        base = home / "Library" / "Application Support" / "safeport"
        return SafeportPaths(
            config_dir=base,
            data_dir=base,
            audit_dir=base / "audit",
            cache_dir=home / "Library" / "Caches" / "safeport",
            run_dir=base / "run",
        )
    config = _xdg(env, "XDG_CONFIG_HOME", home / ".config")
    data = _xdg(env, "XDG_DATA_HOME", home / ".local" / "share")
    state = _xdg(env, "XDG_STATE_HOME", home / ".local" / "state")
    cache = _xdg(env, "XDG_CACHE_HOME", home / ".cache")
    runtime = env.get("XDG_RUNTIME_DIR")
    run_dir = (
        _absolute(runtime, "XDG_RUNTIME_DIR") / "safeport"
        if runtime
        else Path("/tmp") / f"safeport-{uid}"  # noqa: S108 - checked for owner and mode before use
    )
    return SafeportPaths(
        config_dir=config / "safeport",
        data_dir=data / "safeport",
        audit_dir=state / "safeport" / "audit",
        cache_dir=cache / "safeport",
        run_dir=run_dir,
    )


def ensure_private_dir(path: Path, *, uid: int | None = None) -> Path:
    """Create ``path`` as 0700 if missing; refuse it if it is a symlink, foreign-owned or open.

    A shared /tmp lets another user create ``/tmp/safeport-<uid>`` first and wait for our
    socket or files to appear inside; refusing anything we do not own with mode 0700 closes that.
    """
    return ensure_owned_dir(path, uid=uid, mode=0o700)


def ensure_owned_dir(path: Path, *, mode: int, uid: int | None = None) -> Path:
    """Create ``path`` with ``mode`` if missing; refuse a symlink, another owner, or any
    permission bit beyond ``mode`` (a dedicated account's folders are 0750: its humans
    may read or enter them, never create entries in them)."""
    uid = os.geteuid() if uid is None else uid
    missing = [path, *[parent for parent in path.parents if not parent.exists()]]
    # Top down, each with ``mode``: `mkdir(parents=True)` gives the folders it adds above
    # ``path`` the umask's mode (0755), and one of those is often safeport's own (the cache
    # folder above its `context` index folder), which `sp doctor` then rightly flags.
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=mode)
        except FileExistsError:
            pass
        except OSError as exc:
            raise EnvironmentProblem(f"cannot create {folder}: {exc.strerror}") from exc
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot inspect {path}: {exc.strerror}") from exc
    problem = private_dir_problem(st, uid, allowed=mode)
    if problem:
        raise EnvironmentProblem(
            f"{path} {problem}",
            hint=f"remove it or fix it (chmod {mode:o}, owned by uid {uid}), then retry",
        )
    return path


def private_dir_problem(st: os.stat_result, uid: int, *, allowed: int = 0o700) -> str | None:
    """Why a folder's lstat makes it unsafe for private files, or None when it is fine."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if st.st_uid != uid:
        return "is owned by another user"
    if stat.S_IMODE(st.st_mode) & ~allowed & 0o7777:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}, not {allowed:04o}"
    return None


def check_socket_path(path: Path, platform: str | None = None) -> Path:
    """Refuse a socket path the OS would silently truncate or reject."""
    platform = sys.platform if platform is None else platform
    limit = _SUN_PATH_MAX.get(platform, _SUN_PATH_DEFAULT)
    length = len(os.fsencode(path))
    if length > limit:
        raise EnvironmentProblem(
            f"socket path {path} is {length} bytes, over this system's limit of {limit}",
            hint="set SAFEPORT_HOME or XDG_RUNTIME_DIR to a shorter folder",
        )
    return path


def _xdg(env: Mapping[str, str], name: str, default: Path) -> Path:
    value = env.get(name)
    # The XDG spec says relative values are invalid and must be ignored.
    if value and Path(value).is_absolute():
        return Path(value)
    return default


def _absolute(value: str, name: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise EnvironmentProblem(f"{name} must be an absolute path, not {value!r}")
    return path
