"""Service definitions that start the gateway: at login as the user (a systemd user unit, a
LaunchAgent), or at boot as its own account (a systemd system unit, a LaunchDaemon, or a start
script any other init system runs)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.sax.saxutils import escape


def systemd_unit(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """A user unit (~/.config/systemd/user/safeport-gateway.service)."""
    environment = _environment_lines(env)
    return (
        "[Unit]\n"
        "Description=safeport action gateway\n"
        "\n"
        "[Service]\n"
        f"ExecStart={shlex.join(argv)}\n"
        f"{environment}"
        "UnsetEnvironment=LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH PYTHONPATH PYTHONHOME PYTHONSTARTUP\n"
        "ExecReload=/bin/kill -HUP $MAINPID\n"
        "KillSignal=SIGTERM\n"
        "Restart=on-failure\n"
        "NoNewPrivileges=yes\n"
        "LimitCORE=0\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def launchd_plist(argv: Sequence[str], env: Mapping[str, str], log_path: str) -> str:
    """A LaunchAgent (~/Library/LaunchAgents/dev.safeport.gateway.plist)."""
    args, envs = _plist_lists(argv, env)
    return (
        f"{_PLIST_HEAD}"
        f"  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n"
        f"  <key>EnvironmentVariables</key>\n  <dict>\n{envs}  </dict>\n"
        "  <key>RunAtLoad</key><true/>\n"
        "  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n"
        f"  <key>StandardErrorPath</key><string>{escape(log_path)}</string>\n"
        "  <key>SoftResourceLimits</key><dict><key>Core</key><integer>0</integer></dict>\n"
        "</dict>\n</plist>\n"
    )


def systemd_system_unit(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    account: str,
    state_dir: Path,
    run_dir: Path,
    standard: bool,
    precheck: Sequence[str] = (),
) -> str:
    """A system unit (/etc/systemd/system/safeport-gateway.service) for dedicated-account mode.

    The gateway gets two capabilities, both to read and neither to change anything: telling who
    is asking means opening other users' /proc/PID/exe (CAP_SYS_PTRACE) and their environ and
    scripts, which are 0400 or sit in 0700 home folders (CAP_DAC_READ_SEARCH). ProtectHome is
    read-only rather than off-limits for the same reason; ProtectSystem=strict leaves it no
    place to write but its own folders.
    """
    environment = _environment_lines(env)
    pre = f"ExecStartPre={shlex.join(precheck)}\n" if precheck else ""
    folders = _writable_folders(state_dir, run_dir, standard=standard)
    return (
        "[Unit]\n"
        "Description=safeport action gateway (dedicated account)\n"
        "After=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"User={account}\n"
        f"Group={account}\n"
        f"{pre}"
        f"ExecStart={shlex.join(argv)}\n"
        f"{environment}"
        "UnsetEnvironment=LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH PYTHONPATH PYTHONHOME PYTHONSTARTUP\n"
        "ExecReload=/bin/kill -HUP $MAINPID\n"
        "KillSignal=SIGTERM\n"
        # `sp gateway stop` needs no passphrase, so an agent could otherwise keep it down; it
        # comes back locked. Stop it for good with `systemctl stop`.
        "Restart=always\n"
        "RestartSec=2\n"
        f"{folders}"
        f"{_SYSTEM_SANDBOX}"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


# The system unit's confinement: two read capabilities and nothing else, no writable place but
# the account's own folders, no devices, kernel knobs, set-id programs or core files.
_SYSTEM_SANDBOX = (
    "UMask=0027\n"
    "AmbientCapabilities=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH\n"
    "CapabilityBoundingSet=CAP_SYS_PTRACE CAP_DAC_READ_SEARCH\n"
    "NoNewPrivileges=yes\n"
    "ProtectSystem=strict\n"
    "ProtectHome=read-only\n"
    "PrivateTmp=yes\n"
    "PrivateDevices=yes\n"
    "ProtectKernelTunables=yes\n"
    "ProtectKernelModules=yes\n"
    "ProtectControlGroups=yes\n"
    "RestrictSUIDSGID=yes\n"
    "LockPersonality=yes\n"
    "LimitCORE=0\n"
)


def _writable_folders(state_dir: Path, run_dir: Path, *, standard: bool) -> str:
    """At the system's own locations systemd makes the folders; under another prefix the unit
    may only write to the ones the install made."""
    if standard:
        return (
            "StateDirectory=safeport\n"
            "StateDirectoryMode=0750\n"
            "RuntimeDirectory=safeport\n"
            "RuntimeDirectoryMode=0750\n"
        )
    return f"ReadWritePaths={shlex.quote(str(state_dir))} {shlex.quote(str(run_dir))}\n"


def _environment_lines(env: Mapping[str, str]) -> str:
    """One quoted ``Environment=`` line per variable, in name order."""
    return "".join(
        f"Environment={shlex.quote(f'{name}={value}')}\n" for name, value in sorted(env.items())
    )


# What the gateway's account holds and nothing more (the system unit's AmbientCapabilities).
GATEWAY_CAPS = "+sys_ptrace,+dac_read_search"


def start_script(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    account: str,
    run_dir: Path,
    precheck: Sequence[str] = (),
) -> str:
    """A start script (/etc/safeport/gateway-start) for machines without systemd.

    Run as root, in the foreground, by whatever supervises services there (OpenRC's
    ``command``, runit's ``run``, supervisord's ``command``): it makes the sockets folder
    (``/run`` is emptied at boot), runs the code check, then becomes the account with the two
    read capabilities of the system unit and nothing else (``setpriv``: bounding set, no new
    privileges) and replaces itself with the gateway in an emptied environment. The unit's
    sandboxing (ProtectSystem, PrivateTmp…) has no equivalent here; the account's own file
    permissions are what confine it.
    """
    become = (
        f"setpriv --reuid={shlex.quote(account)} --regid={shlex.quote(account)} --init-groups "
        f"--inh-caps={GATEWAY_CAPS} --ambient-caps={GATEWAY_CAPS} "
        f"--bounding-set=-all,{GATEWAY_CAPS} --no-new-privs --"
    )
    environment = " ".join(
        shlex.quote(f"{name}={value}")
        for name, value in sorted({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **env}.items())
    )
    check = f"{become} /usr/bin/env -i {environment} {shlex.join(precheck)}\n" if precheck else ""
    return (
        "#!/bin/sh\n"
        f"# safeport gateway as the account {account}, for a machine without systemd.\n"
        "# Run it as root in the foreground from your init system; it never returns while the\n"
        "# gateway runs. Restart it when it exits: `sp gateway stop` needs no passphrase.\n"
        "set -eu\n"
        "umask 0027\n"
        f"install -d -m 0750 -o {shlex.quote(account)} -g {shlex.quote(account)} "
        f"{shlex.quote(str(run_dir))}\n"
        f"{check}"
        f"exec {become} /usr/bin/env -i {environment} {shlex.join(argv)}\n"
    )


def launchd_daemon_plist(
    argv: Sequence[str], env: Mapping[str, str], *, account: str, precheck: Sequence[str] = ()
) -> str:
    """A LaunchDaemon (/Library/LaunchDaemons/dev.safeport.gateway.plist) run as ``account``.

    launchd has no pre-start step, so the code check runs first in the same argv through the
    system shell's ``&&`` (no shell features beyond that, every word quoted)."""
    if precheck:
        argv = ["/bin/sh", "-c", f"{shlex.join(precheck)} && exec {shlex.join(argv)}"]
    args, envs = _plist_lists(argv, env)
    return (
        f"{_PLIST_HEAD}"
        f"  <key>UserName</key><string>{escape(account)}</string>\n"
        f"  <key>GroupName</key><string>{escape(account)}</string>\n"
        f"  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n"
        f"  <key>EnvironmentVariables</key>\n  <dict>\n{envs}  </dict>\n"
        "  <key>RunAtLoad</key><true/>\n"
        "  <key>KeepAlive</key><true/>\n"  # back after `sp gateway stop`, as Restart=always
        "  <key>Umask</key><integer>23</integer>\n"
        "  <key>SoftResourceLimits</key><dict><key>Core</key><integer>0</integer></dict>\n"
        "</dict>\n</plist>\n"
    )


_PLIST_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
    '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
    '<plist version="1.0">\n<dict>\n'
    "  <key>Label</key><string>dev.safeport.gateway</string>\n"
)


def _plist_lists(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str, str]:
    args = "".join(f"    <string>{escape(arg)}</string>\n" for arg in argv)
    envs = "".join(
        f"    <key>{escape(name)}</key><string>{escape(value)}</string>\n"
        for name, value in sorted(env.items())
    )
    return args, envs
