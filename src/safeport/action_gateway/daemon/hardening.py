"""What a process that holds keys or a passphrase does to itself, and what it must not carry.

The gateway (unlocked keys) and an approver (the passphrase it registers again with after a
restart) both make themselves non-dumpable with core files off, so other processes of the same
user can neither ptrace them nor read their memory through /proc. The variables that would put
other code inside such a process are the loader's and Python's: the gateway refuses to start
with them, and `sp` refuses to send a passphrase to a gateway that has them.
"""

from __future__ import annotations

from collections.abc import Mapping

from safeport.action_gateway.identity.injection import GATEWAY_RUNTIMES, injected_variables
from safeport.shared.undumpable import make_undumpable


def tainted_environment(env: Mapping[str, str]) -> list[str]:
    """Names of variables that would inject code into the gateway (values are never shown)."""
    return injected_variables(env, GATEWAY_RUNTIMES)


def harden_process() -> None:
    """No core files, and not dumpable: other processes of this user cannot ptrace or read
    /proc/PID/mem of the process that holds unlocked keys."""
    make_undumpable()
