"""Executors: the only code that leaves the machine (fixed-vector SSH and HTTPS).

Public: the interface the gateway codes against, and the module the CLI uses on its own
(``ssh.host_key_scan``, which opens no credentialed connection, and ``preflight``, the checks
made before a card, which `sp policy check` runs too).
"""

from safeport.action_gateway.executors.interface import (
    ActionError,
    Executor,
    HttpAction,
    SshAction,
)

__all__ = [
    "ActionError",
    "Executor",
    "HttpAction",
    "SshAction",
    "https",
    "preflight",
    "ssh",
]
