"""Executors: the only code that leaves the machine (fixed-vector SSH and HTTPS).

Public: the interface the gateway codes against, and two modules the CLI uses on their own
(``authorized_keys`` advice and ``host_key_scan``, which opens no credentialed connection).
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
    "authorized_keys",
    "host_key_scan",
]
