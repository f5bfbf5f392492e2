"""Service definitions that start the gateway at login: a systemd user unit, a launchd plist."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape


def systemd_unit(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """A user unit (~/.config/systemd/user/safeport-gateway.service)."""
    environment = "".join(
        f"Environment={shlex.quote(f'{name}={value}')}\n" for name, value in sorted(env.items())
    )
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
    args = "".join(f"    <string>{escape(arg)}</string>\n" for arg in argv)
    envs = "".join(
        f"    <key>{escape(name)}</key><string>{escape(value)}</string>\n"
        for name, value in sorted(env.items())
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
        '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        '<plist version="1.0">\n<dict>\n'
        "  <key>Label</key><string>dev.safeport.gateway</string>\n"
        f"  <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n"
        f"  <key>EnvironmentVariables</key>\n  <dict>\n{envs}  </dict>\n"
        "  <key>RunAtLoad</key><true/>\n"
        "  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n"
        f"  <key>StandardErrorPath</key><string>{escape(log_path)}</string>\n"
        "  <key>SoftResourceLimits</key><dict><key>Core</key><integer>0</integer></dict>\n"
        "</dict>\n</plist>\n"
    )
