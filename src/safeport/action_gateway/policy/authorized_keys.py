"""Server-side ``authorized_keys`` options that confine a gateway key (pure advice).

Pinning the server's key protects the gateway from a fake server; these options protect the
server from a stolen gateway key. ``restrict`` turns off every forwarding, the pty, X11 and
``~/.ssh/rc``; ``from=`` limits where the key may be used from; ``command=`` forces the one
command the host is for, whatever the client asks. OpenSSH can force only one command per key,
so a host with several commands (or one whose argv takes parameters) is better served by one key
per command, each with its own forced command. ``sp policy check`` prints this for every host.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from safeport.shared.schemas.config import GatewayPolicy, SshHost

FROM_PLACEHOLDER = "<address of this machine as the server sees it>"


@dataclass(frozen=True)
class AuthorizedKeysAdvice:
    host_id: str
    options: str
    """The options field to put before the gateway's public key on the server."""
    forced_command: str | None
    """The command forced by ``command=``, or None when the host cannot be confined to one."""
    notes: tuple[str, ...]

    def line(self, public_key: str = "<public key of the credential>") -> str:
        return f"{self.options} {public_key}"


def advise_policy(policy: GatewayPolicy) -> list[AuthorizedKeysAdvice]:
    """Advice for every SSH host of a policy, in name order (what `sp policy check` prints)."""
    return [advise(host_id, policy.ssh.hosts[host_id]) for host_id in sorted(policy.ssh.hosts)]


def advise(host_id: str, host: SshHost) -> AuthorizedKeysAdvice:
    """The options that confine the key used for ``host`` on the server side."""
    options = ["restrict", f'from="{FROM_PLACEHOLDER}"']
    notes = [
        f"put this line in ~{host.user}/.ssh/authorized_keys on {host.address}",
        "replace the from= value with the address (or CIDR) this gateway connects from",
    ]
    forced: str | None = None
    fixed = [c for c in host.commands.values() if not c.params]
    if len(host.commands) == 1 and len(fixed) == 1:
        forced = shlex.join(fixed[0].argv)
        # authorized_keys quotes with double quotes; a literal " inside must be escaped.
        options.append('command="{}"'.format(forced.replace("\\", "\\\\").replace('"', '\\"')))
        notes.append("the key can run only this command, whatever a client asks for")
    elif not host.commands:
        notes.append("the host declares no command; the key should not be installed yet")
    else:
        names = ", ".join(sorted(host.commands))
        reason = (
            "the host declares several commands"
            if len(host.commands) > 1
            else "the host's only command takes parameters"
        )
        notes.append(
            f"no single command can be forced: {reason} ({names}); "
            "use one key per command, each with its own forced command= (a parameterised "
            "command can be forced to a wrapper that checks $SSH_ORIGINAL_COMMAND)"
        )
    return AuthorizedKeysAdvice(
        host_id=host_id, options=",".join(options), forced_command=forced, notes=tuple(notes)
    )
