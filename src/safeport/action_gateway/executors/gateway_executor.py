"""The gateway's :class:`~safeport.action_gateway.executors.interface.Executor`: SSH, HTTPS
and read-only SQL."""

from __future__ import annotations

import time
from collections.abc import Callable

import paramiko

from safeport.action_gateway.executors.https.client import HttpsExecutor
from safeport.action_gateway.executors.https.pinned_network import Resolver, system_resolver
from safeport.action_gateway.executors.https.trust_files import trusted_owners
from safeport.action_gateway.executors.interface import (
    ActionError,
    Executor,
    HttpAction,
    SqlAction,
    SshAction,
)
from safeport.action_gateway.executors.preflight import check_before_card
from safeport.action_gateway.executors.sql.pool import SqlPool, inspect_roles
from safeport.action_gateway.executors.ssh.command_channel import run_command
from safeport.action_gateway.executors.ssh.deadline import action_deadline
from safeport.action_gateway.executors.ssh.pool import SshPool
from safeport.action_gateway.executors.ssh.transport import StaleTransport, open_transport
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.wire import HttpResult, SqlResult, SshExecResult
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


class GatewayExecutor:
    """Runs fixed-vector actions; blocking, safe to call from several worker threads."""

    def __init__(
        self, *, resolver: Resolver = system_resolver, served_uids: frozenset[int] = frozenset()
    ) -> None:
        """``resolver``: the one DNS lookup per HTTPS connection (tests map names to loopback).
        ``served_uids``: the humans the gateway serves, whose files never decide trust."""
        self._ssh = SshPool()
        self._resolver = resolver
        self._trust_owners = trusted_owners(served_uids)
        self._https = HttpsExecutor(resolver, trust_owners=self._trust_owners)
        self._sql = SqlPool()

    def check_before_card(self, action: SshAction | HttpAction | SqlAction) -> None:
        check_before_card(action, self._resolver, self._trust_owners)

    def ssh_exec(self, action: SshAction, secret: SshKeySecret) -> SshExecResult:
        command = action.command_line  # prepared before approval; sent exactly as shown
        timeout_s, cap = action.command.timeout_s, action.command.max_output_bytes

        def run(transport: paramiko.Transport) -> SshExecResult:
            return run_command(action.host_id, transport, command, timeout_s, cap)

        # Getting a transport counts against the command's timeout_s (ssh/deadline.py).
        with action_deadline(time.monotonic() + timeout_s):
            return self._ssh_run(action, secret, run)

    def _ssh_run(
        self,
        action: SshAction,
        secret: SshKeySecret,
        run: Callable[[paramiko.Transport], SshExecResult],
    ) -> SshExecResult:
        if secret.certificate is None:
            return self._ssh.run(action.host_id, action.host, secret, run)
        # A key made for this one action: its connection ends with it, never pooled for the
        # next action (whose own certificate the host checks again).
        transport = open_transport(action.host_id, action.host, secret)
        try:
            return run(transport)
        except StaleTransport as exc:
            raise ActionError(
                "unreachable", f"the ssh session with {action.host_id!r} closed before the command"
            ) from exc
        finally:
            transport.close()

    def http_request(self, action: HttpAction, secret: TokenSecret | BasicSecret) -> HttpResult:
        return self._https.request(action, secret)

    def sql_query(
        self, action: SqlAction, secret: TokenSecret | SshKeySecret | BasicSecret
    ) -> SqlResult:
        return self._sql.run(action, secret)

    def inspect_roles(
        self, policy: GatewayPolicy, secret_of: Callable[[str], object]
    ) -> tuple[list[str], list[str]]:
        return inspect_roles(policy, secret_of)

    def close_all(self) -> None:
        self._ssh.close_all()
        self._https.close_all()
        self._sql.close_all()

    @property
    def pooled_ssh_connections(self) -> int:
        return len(self._ssh)

    @property
    def pooled_sql_connections(self) -> int:
        return len(self._sql)


def _conforms(executor: GatewayExecutor) -> Executor:
    """Checked by mypy: the class satisfies the gateway's Executor protocol."""
    return executor
