"""`sp gateway install` / `uninstall`: the gateway as its own OS account (dedicated-account mode).

Planning is pure: :func:`plan_install` turns the options and the facts read from the system
(:class:`SystemFacts`) into a list of ``install_steps.Step`` values, which `--print` shows and
``install_steps.carry_out`` performs in order. Each step is one command with a fixed argv, one
folder, or one file; nothing is run through a shell.

What it sets up (Linux; macOS gets a LaunchDaemon and the same folders):
- a system account (default ``safeport``) with its own group, no shell, no home of its own;
- its folders: state (vault, accepted policy, journals; 0750, so the named humans, added to the
  account's group, can read the journals and nothing else), cache (0700) and the run folder
  for the sockets (0750: the account's group reaches them, only the account creates entries);
- ``/etc/safeport/install.toml`` (root, 0644): the anchor `sp` and the context server trust;
- a systemd system unit that runs the gateway as that account, with CAP_SYS_PTRACE as its only
  capability (to read who is asking from other users' ``/proc`` entries).
"""

from __future__ import annotations

import os
import pwd
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from safeport.action_gateway.install import code_check
from safeport.action_gateway.install.root_checks import (
    check_code_is_root_owned,
    check_prefix,
    require_root,
)
from safeport.action_gateway.install.service_files import (
    launchd_daemon_plist,
    start_script,
    systemd_system_unit,
)
from safeport.action_gateway.install.start_checks import (
    AUDIT_MODE,
    CACHE_MODE,
    RUN_MODE,
    STATE_MODE,
    code_roots,
)
from safeport.action_gateway.install.steps import Step, carry_out
from safeport.errors import EnvironmentProblem, UsageError
from safeport.shared.install_file import ENV_VARIABLE, DedicatedInstall, render_install
from safeport.shared.launch import sp_command

UNIT_NAME = "safeport-gateway.service"
PLIST_NAME = "dev.safeport.gateway.plist"
UNKNOWN_ID = -1  # an account useradd has not created yet (shown in --print)


@dataclass(frozen=True)
class InstallOptions:
    account: str
    humans: tuple[str, ...]
    prefix: Path = Path("/")
    platform: str = sys.platform
    python: str = sys.executable
    # The interpreter the venv was made from (root-owned, unlike the venv's own links) and the
    # folders the gateway imports from: what the service checks before it starts the gateway.
    base_python: str = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    code: tuple[Path, ...] = field(default_factory=lambda: tuple(code_roots()))
    # What starts the gateway on Linux: a systemd unit, or a start script for any other init
    # system (OpenRC, runit, supervisord) or none at all.
    init: Literal["systemd", "script"] = "systemd"

    @property
    def state_dir(self) -> Path:
        return self._under("var/lib/safeport")

    @property
    def run_dir(self) -> Path:
        return self._under("run/safeport")

    @property
    def install_file(self) -> Path:
        return self._under("etc/safeport/install.toml")

    @property
    def check_file(self) -> Path:
        return self._under("etc/safeport/check_code.py")

    @property
    def service_file(self) -> Path:
        if self.platform == "darwin":
            return self._under(f"Library/LaunchDaemons/{PLIST_NAME}")
        if self.init == "script":
            return self.start_file
        return self._under(f"etc/systemd/system/{UNIT_NAME}")

    @property
    def start_file(self) -> Path:
        return self._under("etc/safeport/gateway-start")

    @property
    def standard(self) -> bool:
        """Installed at the system's own locations (so systemd may manage the folders)."""
        return self.prefix == Path("/")

    def _under(self, relative: str) -> Path:
        return self.prefix / relative


@dataclass(frozen=True)
class SystemFacts:
    """What the plan depends on, read once from the system (see :func:`read_facts`)."""

    account_uid: int | None
    account_gid: int | None
    humans: dict[str, int]  # name -> uid, for the names given


def read_facts(options: InstallOptions) -> SystemFacts:
    uid = gid = None
    try:
        entry = pwd.getpwnam(options.account)
        uid, gid = entry.pw_uid, entry.pw_gid
    except KeyError:
        pass
    humans: dict[str, int] = {}
    for name in options.humans:
        try:
            humans[name] = pwd.getpwnam(name).pw_uid
        except KeyError:
            raise UsageError(f"there is no user named {name!r} to admit") from None
    return SystemFacts(account_uid=uid, account_gid=gid, humans=humans)


def plan_install(options: InstallOptions, facts: SystemFacts) -> list[Step]:
    """Every step of an install, in order (pure)."""
    if not options.humans:
        raise UsageError(
            "name at least one human allowed to propose and approve: --human USER",
            hint="run it with sudo from your own account and it defaults to you",
        )
    if options.account in options.humans:
        raise UsageError("the gateway's account cannot be one of its humans")
    uid = facts.account_uid if facts.account_uid is not None else UNKNOWN_ID
    gid = facts.account_gid if facts.account_gid is not None else UNKNOWN_ID
    return [
        *_account_steps(options, facts),
        *_folder_steps(options, (uid, gid)),
        *_trust_steps(options, facts, uid, gid),
        _service_step(options),
    ]


def _account_steps(options: InstallOptions, facts: SystemFacts) -> list[Step]:
    """The gateway's account (created first, when missing, so ``install`` can plan again with
    its real ids), and each human a member of its group."""
    steps: list[Step] = []
    linux = options.platform != "darwin"
    if facts.account_uid is None:
        if not linux:
            raise EnvironmentProblem(
                f"there is no account {options.account!r}",
                hint="create a hidden system account for the gateway (for example with "
                "`sysadminctl -addUser`), then run this again",
            )
        steps.append(
            Step(
                f"create the system account {options.account} (own group, no shell, no login)",
                run=(
                    "useradd",
                    "--system",
                    "--user-group",
                    "--home-dir",
                    str(options.state_dir),
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                    options.account,
                ),
            )
        )
    for name in options.humans:
        steps.append(
            Step(
                f"let {name} read the journals (member of the group {options.account})",
                run=("usermod", "--append", "--groups", options.account, name)
                if linux
                else ("dseditgroup", "-o", "edit", "-a", name, "-t", "user", options.account),
            )
        )
    return steps


def _folder_steps(options: InstallOptions, owner: tuple[int, int]) -> list[Step]:
    """The account's folders, each with the mode that says who may reach it."""
    return [
        Step(
            f"folder for {why}",
            folder=folder,
            mode=mode,
            owner=owner,
            owner_name=options.account,
        )
        for folder, mode, why in (
            (options.state_dir, STATE_MODE, "vault, accepted policy and journals"),
            (options.state_dir / "audit", AUDIT_MODE, "journals, readable by the group"),
            (options.state_dir / "cache", CACHE_MODE, "the gateway's cache"),
            (options.run_dir, RUN_MODE, "the sockets: reached by the account's group only"),
        )
    ]


def _trust_steps(options: InstallOptions, facts: SystemFacts, uid: int, gid: int) -> list[Step]:
    """What others trust, root's to change: the code check the service runs, and the install
    file `sp` and the context server read (written once the account's ids are known)."""
    install = DedicatedInstall(
        source=options.install_file,
        account=options.account,
        uid=uid,
        gid=gid,
        state_dir=options.state_dir,
        run_dir=options.run_dir,
        humans=tuple(sorted(facts.humans.values())),
    )
    names = {uid_: name for name, uid_ in facts.humans.items()}
    return [
        Step(
            "the code check the service runs before the gateway, with no site-packages loaded",
            file=options.check_file,
            content=Path(code_check.__file__).read_text(encoding="utf-8"),
            mode=0o644,
        ),
        Step(
            "the install file `sp` and the context server trust (only root can change it)",
            file=options.install_file,
            content=render_install(install, names) if uid != UNKNOWN_ID else "(after useradd)",
            mode=0o644,
        ),
    ]


def _service_step(options: InstallOptions) -> Step:
    """What starts the gateway as the account: a systemd unit or a start script on Linux, a
    LaunchDaemon on macOS; each runs the code check first."""
    linux = options.platform != "darwin"
    argv = sp_command(["gateway", "run"], python=options.python)
    env = {ENV_VARIABLE: str(options.install_file)}
    precheck = [options.base_python, "-I", "-S", str(options.check_file), *map(str, options.code)]
    mode = 0o644
    if linux and options.init == "script":
        text = start_script(
            argv, env, account=options.account, run_dir=options.run_dir, precheck=precheck
        )
        mode = 0o755
    elif linux:
        text = systemd_system_unit(
            argv,
            env,
            precheck=precheck,
            account=options.account,
            state_dir=options.state_dir,
            run_dir=options.run_dir,
            standard=options.standard,
        )
    else:
        text = launchd_daemon_plist(argv, env, account=options.account, precheck=precheck)
    return Step(
        "the service that runs the gateway as that account"
        if options.init == "systemd" or not linux
        else "the start script that runs the gateway as that account (run it as root)",
        file=options.service_file,
        content=text,
        mode=mode,
    )


def plan_uninstall(options: InstallOptions, facts: SystemFacts, *, purge: bool) -> list[Step]:
    """Undo an install (pure). The vault and journals stay unless ``purge``: evidence is never
    destroyed by default."""
    steps = [
        Step("remove the service", file=options.service_file, remove=True),
        *(
            [Step("remove the start script", file=options.start_file, remove=True)]
            if options.platform != "darwin" and options.init == "systemd"
            else []
        ),
        Step("remove the install file", file=options.install_file, remove=True),
        Step("remove the socket folder", folder=options.run_dir, remove=True),
    ]
    if purge:
        steps.append(
            Step(
                "remove the vault, the accepted policy and the journals",
                folder=options.state_dir,
                remove=True,
            )
        )
        if facts.account_uid is not None:
            steps.append(
                Step(
                    f"remove the account {options.account} and its group",
                    run=("userdel", options.account)
                    if options.platform != "darwin"
                    else ("dscl", ".", "-delete", f"/Users/{options.account}"),
                )
            )
    return steps


def install(options: InstallOptions, *, dry_run: bool) -> list[Step]:
    """Plan (and unless ``dry_run``, perform) an install; returns the steps as planned.

    The account is created first, then the rest is planned again with its real uid and gid, so
    the install file and the folders name the account useradd actually made.
    """
    facts = read_facts(options)
    steps = plan_install(options, facts)
    if dry_run:
        return steps
    require_root()
    check_code_is_root_owned()
    check_prefix(options.prefix)
    if facts.account_uid is None:
        carry_out(steps[:1])
        facts = read_facts(options)
        steps = plan_install(options, facts)
    carry_out(steps)
    return steps


def uninstall(options: InstallOptions, *, purge: bool, dry_run: bool) -> list[Step]:
    facts = SystemFacts(account_uid=_uid_of(options.account), account_gid=None, humans={})
    steps = plan_uninstall(options, facts, purge=purge)
    if not dry_run:
        require_root()
        carry_out(steps)
    return steps


def _uid_of(account: str) -> int | None:
    try:
        return pwd.getpwnam(account).pw_uid
    except KeyError:
        return None
