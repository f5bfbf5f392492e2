"""Every operation of both sockets with its request model and its result model.

The gateway registers one handler per :class:`ControlOp` (mypy checks that the handler takes
the request and returns the result); `sp` sends a :class:`ControlOp` and gets back its result
model, or a :class:`~safeport.errors.WireError` when the reply does not match it. A test checks
that the request union, this table and the gateway's handlers name the same operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_args

from pydantic import BaseModel

from safeport.shared.schemas import control as rq
from safeport.shared.schemas import grant_wire as gw
from safeport.shared.schemas import key_wire as kw
from safeport.shared.schemas import oauth_wire as ow
from safeport.shared.schemas import results as rs
from safeport.shared.schemas import results_vault as rv
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.wire import (
    Cancel,
    CancelResult,
    CatalogRequest,
    Envelope,
    Hello,
    HelloResult,
    HttpResult,
    ProposeHttp,
    ProposeSql,
    ProposeSsh,
    SqlResult,
    SshExecResult,
)

Request = TypeVar("Request", bound=Envelope)
Result = TypeVar("Result", bound=BaseModel)


@dataclass(frozen=True)
class ControlOp(Generic[Request, Result]):
    """One operation: the request model whose ``op`` names it, and the model of its result."""

    request: type[Request]
    result: type[Result]

    @property
    def name(self) -> str:
        name: str = get_args(self.request.model_fields["op"].annotation)[0]
        return name


STATUS = ControlOp(rq.StatusRequest, rs.StatusResult)
GATEWAY_STOP = ControlOp(rq.GatewayStopRequest, rs.StoppingResult)
GATEWAY_RELOAD = ControlOp(rq.GatewayReloadRequest, rs.PolicyState)
VAULT_STATUS = ControlOp(rq.VaultStatusRequest, rv.VaultStateResult)
VAULT_DESCRIBE = ControlOp(rq.VaultDescribeRequest, rv.VaultDescribeResult)
VAULT_INIT = ControlOp(rq.VaultInitRequest, rv.VaultCreatedResult)
VAULT_UNLOCK = ControlOp(rq.VaultUnlockRequest, rv.VaultUnlockedResult)
VAULT_LOCK = ControlOp(rq.VaultLockRequest, rv.VaultLockedResult)
VAULT_UNLOCK_KEYRING = ControlOp(rq.VaultUnlockKeyringRequest, rv.VaultKeyringUnlockedResult)
VAULT_ENTRIES = ControlOp(rq.VaultEntriesRequest, rv.VaultEntriesResult)
VAULT_ADD = ControlOp(rq.VaultAddRequest, rv.EntryAddedResult)
VAULT_ROTATE = ControlOp(rq.VaultRotateRequest, rv.EntryRotatedResult)
VAULT_REMOVE = ControlOp(rq.VaultRemoveRequest, rv.EntryRemovedResult)
OAUTH_BEGIN = ControlOp(rq.OAuthBeginRequest, gw.OAuthBegunResult)
OAUTH_FINISH = ControlOp(rq.OAuthFinishRequest, gw.OAuthConnectedResult)
OAUTH_DEVICE_WAIT = ControlOp(rq.OAuthDeviceWaitRequest, gw.OAuthDeviceStateResult)
POLICY_STATUS = ControlOp(rq.PolicyStatusRequest, rs.PolicySnapshot)
POLICY_ACCEPT = ControlOp(rq.PolicyAcceptRequest, rs.PolicyAcceptedResult)
APPROVER_REGISTER = ControlOp(rq.ApproverRegisterRequest, rs.ApproverResult)
APPROVER_KEYS = ControlOp(rq.ApproverKeysRequest, kw.ApproverKeysResult)
APPROVER_KEY_CHALLENGE = ControlOp(rq.ApproverKeyChallengeRequest, kw.KeyChallengeResult)
APPROVER_ENROLL = ControlOp(rq.ApproverEnrollRequest, kw.KeyEnrolledResult)
APPROVER_REMOVE = ControlOp(rq.ApproverRemoveRequest, kw.KeyRemovedResult)
APPROVALS_LIST = ControlOp(rq.ApprovalsListRequest, rs.CardsResult)
APPROVALS_DECIDE = ControlOp(rq.ApprovalsDecideRequest, rs.DecidedResult)
APPROVALS_WATCH = ControlOp(rq.ApprovalsWatchRequest, rs.WatchingResult)
SESSIONS_LIST = ControlOp(rq.SessionsListRequest, rs.SessionsResult)
SESSIONS_REVOKE = ControlOp(rq.SessionsRevokeRequest, rs.RevokedResult)
CLIENTS_LIST = ControlOp(rq.ClientsListRequest, rs.RemoteClientsResult)
CLIENTS_REVOKE = ControlOp(rq.ClientsRevokeRequest, rs.RevokedResult)
AUDIT_CHECKPOINT = ControlOp(rq.AuditCheckpointRequest, rs.CheckpointResult)
SOURCES_CHECK = ControlOp(rq.SourcesCheckRequest, rs.SourcesCheckResult)

CONTROL_OPS: dict[str, ControlOp[Any, Any]] = {
    op.name: op
    for op in (
        STATUS,
        GATEWAY_STOP,
        GATEWAY_RELOAD,
        VAULT_STATUS,
        VAULT_DESCRIBE,
        VAULT_INIT,
        VAULT_UNLOCK,
        VAULT_LOCK,
        VAULT_UNLOCK_KEYRING,
        VAULT_ENTRIES,
        VAULT_ADD,
        VAULT_ROTATE,
        VAULT_REMOVE,
        OAUTH_BEGIN,
        OAUTH_FINISH,
        OAUTH_DEVICE_WAIT,
        POLICY_STATUS,
        POLICY_ACCEPT,
        APPROVER_REGISTER,
        APPROVER_KEYS,
        APPROVER_KEY_CHALLENGE,
        APPROVER_ENROLL,
        APPROVER_REMOVE,
        APPROVALS_LIST,
        APPROVALS_DECIDE,
        APPROVALS_WATCH,
        SESSIONS_LIST,
        SESSIONS_REVOKE,
        CLIENTS_LIST,
        CLIENTS_REVOKE,
        AUDIT_CHECKPOINT,
        SOURCES_CHECK,
    )
}

# agent.sock: each request's result (a proposal's depends on its action).
AGENT_RESULTS: dict[type[Envelope], type[BaseModel]] = {
    Hello: HelloResult,
    CatalogRequest: Catalog,
    Cancel: CancelResult,
    ProposeSsh: SshExecResult,
    ProposeHttp: HttpResult,
    ProposeSql: SqlResult,
    ow.OAuthKeys: ow.OAuthKeysResult,
    ow.OAuthMetadata: ow.OAuthMetadataResult,
    ow.OAuthRegister: ow.OAuthHttpAnswer,
    ow.OAuthAuthorize: ow.OAuthAuthorizeResult,
    ow.OAuthAuthorizeWait: ow.OAuthAuthorizeWaitResult,
    ow.OAuthToken: ow.OAuthHttpAnswer,
    ow.OAuthRevoke: ow.OAuthHttpAnswer,
    ow.OAuthCheck: ow.OAuthCheckResult,
}
