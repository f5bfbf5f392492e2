"""Rungs 8 and 9's work on one action: run it with the credential injected here, then filter
its typed result — first the credential it ran with, in any form and for every executor, then
the declared parts with every other secret redacted.

Apart from the ladder's bookkeeping (journals, cards, refusals) so that what reaches the agent
is decided in one short function a reader can check against the executors' contracts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from safeport.action_gateway.executors.interface import Executor, SqlAction, SshAction
from safeport.action_gateway.ladder.credential_texts import result_needles
from safeport.action_gateway.ladder.outcome import ActionResult
from safeport.action_gateway.ladder.resolve import Resolved
from safeport.action_gateway.ladder.result_filters import (
    filter_http,
    filter_sql,
    filter_ssh,
    withhold_credential,
)
from safeport.errors import Error
from safeport.vault.secrets import BasicSecret, SshKeySecret, TokenSecret


def execute_filtered(
    executor: Executor,
    secret: object,
    resolved: Resolved,
    *,
    renew: Callable[[], TokenSecret] | None = None,
    withheld: Sequence[str] = (),
) -> ActionResult:
    """The action's filtered result; raises the executor's ``ActionError`` (a withheld result
    included) or ``Error`` when the credential is not of the kind the action needs.

    ``renew`` (an OAuth grant's) gives a new token after the service answered 401: the request
    is sent once more with it. ``withheld`` are more texts the result must not hold."""
    action = resolved.action
    if isinstance(action, SqlAction):
        if not isinstance(secret, TokenSecret | SshKeySecret | BasicSecret):
            raise Error("the credential is not a password or a private key")
        sql = executor.sql_query(action, secret)
        withhold_credential(sql, *result_needles(secret))
        return filter_sql(sql, action.query.columns)
    if isinstance(action, SshAction):
        if not isinstance(secret, SshKeySecret):
            raise Error("the credential is not an ssh key")
        ssh = executor.ssh_exec(action, secret)
        withhold_credential(ssh, *result_needles(secret))
        return filter_ssh(ssh, resolved.max_output_bytes)
    if not isinstance(secret, TokenSecret | BasicSecret):
        raise Error("the credential is not a token or basic secret")
    texts, _ = result_needles(secret)
    http = executor.http_request(action, secret)
    if http.status == 401 and renew is not None:
        http = executor.http_request(action, renew())
    withhold_credential(http, [*texts, *withheld])
    return filter_http(http, action.operation.response_fields)
