"""Executors: the only code that leaves the machine (fixed-vector SSH and HTTPS)."""

from safeport.action_gateway.executors.interface import (
    ActionError,
    Executor,
    HttpAction,
    SshAction,
)

__all__ = ["ActionError", "Executor", "HttpAction", "SshAction"]
