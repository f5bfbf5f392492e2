"""Executor tests speak in unprepared actions and prepare them the way the ladder does.

The ladder prepares an action (``executors/prepare.py``) before approval and hands the executor
the prepared value. These tests exercise both halves at once: a value the preparation refuses
reaches the test as the same :class:`ActionError` an executor would raise, at the same call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.prepare import prepare_http, prepare_ssh
from safeport.shared.schemas.config import HttpOperation, HttpService, SshCommand, SshHost
from safeport.shared.schemas.wire import HttpResult, SshExecResult
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


@dataclass(frozen=True)
class PlannedSsh:
    host_id: str
    host: SshHost
    command_id: str
    command: SshCommand
    args: Mapping[str, Any]


@dataclass(frozen=True)
class PlannedHttp:
    service_id: str
    service: HttpService
    operation_id: str
    operation: HttpOperation
    args: Mapping[str, Any]


class PreparingExecutor:
    """A :class:`GatewayExecutor` that first prepares what it is given."""

    def __init__(self, inner: GatewayExecutor) -> None:
        self.inner = inner

    def ssh_exec(self, planned: PlannedSsh, secret: SshKeySecret) -> SshExecResult:
        prepared = prepare_ssh(
            planned.host_id, planned.host, planned.command_id, planned.command, planned.args
        )
        return self.inner.ssh_exec(prepared, secret)

    def http_request(self, planned: PlannedHttp, secret: TokenSecret | BasicSecret) -> HttpResult:
        prepared = prepare_http(
            planned.service_id,
            planned.service,
            planned.operation_id,
            planned.operation,
            planned.args,
        )
        return self.inner.http_request(prepared, secret)

    def close_all(self) -> None:
        self.inner.close_all()

    @property
    def pooled_ssh_connections(self) -> int:
        return self.inner.pooled_ssh_connections
