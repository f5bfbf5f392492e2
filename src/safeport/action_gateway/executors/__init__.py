"""Executors: the only code that leaves the machine (fixed-vector SSH and HTTPS).

Public: the interface the gateway codes against, and the module the CLI uses on its own
(``ssh.host_key_scan``, which opens no credentialed connection, and ``preflight``, the checks
made before a card, which `sp policy check` runs too).
"""

from safeport.action_gateway.executors.interface import (
    ActionError,
    Executor,
    HttpAction,
    SqlAction,
    SshAction,
    privileged_role_check,
)

__all__ = [
    "ActionError",
    "Executor",
    "HttpAction",
    "SqlAction",
    "SshAction",
    "https",
    "preflight",
    "privileged_role_check",
    "sql",
    "ssh",
]
