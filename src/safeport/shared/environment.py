"""Every environment variable safeport reads about itself, and what each one changes.

`sp help environment` and the CLI reference print this table; a test reads the source for every
variable the code looks up and fails when one is missing here. Variables read from another
process's environment (a requester's, to judge what it runs) are not settings and are not
listed: the gateway reads them, the person running `sp` does not set them for safeport.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EnvironmentVariable:
    name: str
    meaning: str


VARIABLES: tuple[EnvironmentVariable, ...] = (
    EnvironmentVariable(
        "SAFEPORT_HOME",
        "One folder for everything (policy, vault, journals, cache, sockets) instead of the "
        "platform's folders; absolute. MCP client entries and service files carry it on.",
    ),
    EnvironmentVariable(
        "SAFEPORT_GATEWAY",
        "The install file of a dedicated-account gateway (default /etc/safeport/install.toml "
        "when SAFEPORT_HOME is not set); absolute.",
    ),
    EnvironmentVariable(
        "SAFEPORT_SECURITY_KEY_SOCKET",
        "A socket that speaks CTAP for a security key (a forwarded or emulated key), used "
        "instead of USB keys for approvals.",
    ),
    EnvironmentVariable(
        "XDG_CONFIG_HOME",
        "Linux: the folder above safeport/ for gateway.toml and context.toml (default ~/.config).",
    ),
    EnvironmentVariable(
        "XDG_DATA_HOME",
        "Linux: the folder above safeport/ for the vault and its public keys "
        "(default ~/.local/share).",
    ),
    EnvironmentVariable(
        "XDG_STATE_HOME",
        "Linux: the folder above safeport/audit/ for the journals (default ~/.local/state).",
    ),
    EnvironmentVariable(
        "XDG_CACHE_HOME",
        "Linux: the folder above safeport/ for the context server's index (default ~/.cache).",
    ),
    EnvironmentVariable(
        "XDG_RUNTIME_DIR",
        "Linux: the folder above safeport/ for the gateway's sockets (default /tmp/safeport-UID).",
    ),
    EnvironmentVariable(
        "HOME", "The home folder the default locations and MCP client files are found under."
    ),
    EnvironmentVariable(
        "CLAUDE_CONFIG_DIR", "Where Claude Code keeps its settings (`sp client` reads it)."
    ),
    EnvironmentVariable(
        "CODEX_HOME", "Where Codex keeps config.toml (default ~/.codex; `sp client` reads it)."
    ),
    EnvironmentVariable(
        "SUDO_USER",
        "`sudo sp gateway install`: the human the install names when no --human is given.",
    ),
    EnvironmentVariable(
        "DBUS_SESSION_BUS_ADDRESS",
        "The gateway shows a desktop notice for a new approval card (notify-send) only when "
        "a session bus is named.",
    ),
    EnvironmentVariable(
        "VISUAL",
        "The editor `sp policy edit` opens gateway.toml in (split as a shell splits it, run "
        "with no shell); EDITOR when unset, then vi at a terminal.",
    ),
    EnvironmentVariable("EDITOR", "The editor `sp policy edit` opens when VISUAL is unset."),
    EnvironmentVariable(
        "PATH",
        "Where the gateway finds notify-send (absolute entries only); `sp demo` passes it on.",
    ),
)

NAMES = frozenset(variable.name for variable in VARIABLES)


def environment_lines(width: int = 100) -> list[str]:
    """The table as `sp help environment` prints it: a name, then its meaning indented."""
    import textwrap

    lines = ["Environment variables safeport reads:", ""]
    for variable in VARIABLES:
        lines.append(variable.name)
        lines += textwrap.wrap(
            variable.meaning, width=width, initial_indent="    ", subsequent_indent="    "
        )
    return lines
