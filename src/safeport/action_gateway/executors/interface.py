"""The seam between the decision ladder and the network.

The ladder builds an :class:`SshAction` or :class:`HttpAction` from the *accepted* policy and
already-validated arguments, takes the secret from the unlocked vault, and calls an
:class:`Executor`. Executors translate every foreign exception (paramiko, httpx, ssl, socket)
into an :class:`ActionError` once, at their boundary; the ladder never imports paramiko or httpx.
Calls are blocking; the gateway runs them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from safeport.errors import Error
from safeport.shared.schemas.config import HttpOperation, HttpService, SshCommand, SshHost
from safeport.shared.schemas.wire import HttpResult, SshExecResult
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret

ActionFailure = Literal[
    "unreachable",  # connect failed / refused / DNS
    "host_key_mismatch",  # the server's key is not pinned
    "auth_failed",
    "timeout",
    "address_refused",  # resolved to an address the service may not reach
    "redirect_blocked",
    "bad_response",  # non-JSON, missing field, over the cap
    "tls_failed",
    "invalid_target",  # URL or command could not be built safely
]


class ActionError(Error):
    """A remote action failed; ``failure`` is the category, the message never holds a secret."""

    exit_code = 1

    def __init__(self, failure: ActionFailure, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.failure = failure

    @property
    def code(self) -> Literal["upstream", "timeout", "denied"]:
        """The wire error code (DESIGN.md §5) this failure maps to."""
        if self.failure == "timeout":
            return "upstream"  # `timeout` on the wire means no approver in time
        if self.failure in ("address_refused", "invalid_target"):
            return "denied"
        return "upstream"


@dataclass(frozen=True)
class SshAction:
    host_id: str
    host: SshHost
    command_id: str
    command: SshCommand
    args: Mapping[str, str | int]


@dataclass(frozen=True)
class HttpAction:
    service_id: str
    service: HttpService
    operation_id: str
    operation: HttpOperation
    args: Mapping[str, str | int]


class Executor(Protocol):
    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult: ...

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult: ...

    def close_all(self) -> None:
        """Drop every pooled connection (on vault lock and gateway stop)."""
