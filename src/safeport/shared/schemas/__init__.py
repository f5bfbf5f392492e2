"""Contracts shared by both processes: wire messages, audit records, gateway policy.

The JSON Schema files beside this module are generated from these models by
``python -m safeport.shared.schemas`` and kept in sync by a test. Other packages import the
names below or the contract modules themselves (``audit``, ``config``, ``wire``).
"""

from safeport.shared.schemas.audit import AuditRecord, SealedBody
from safeport.shared.schemas.config import (
    Credential,
    GatewayPolicy,
    HttpOperation,
    HttpService,
    ParamSpec,
    SshCommand,
    SshHost,
    parse_gateway_policy,
    policy_digest,
)
from safeport.shared.schemas.wire import (
    PROTOCOL_VERSION,
    AgentRequest,
    Cancel,
    CatalogRequest,
    ControlRequest,
    ErrorBody,
    ErrorCode,
    Hello,
    HttpResult,
    ProposeHttp,
    ProposeSsh,
    Reply,
    ReplyError,
    ReplyOk,
    SshExecResult,
)

__all__ = [
    "PROTOCOL_VERSION",
    "AgentRequest",
    "AuditRecord",
    "Cancel",
    "CatalogRequest",
    "ControlRequest",
    "Credential",
    "ErrorBody",
    "ErrorCode",
    "GatewayPolicy",
    "Hello",
    "HttpOperation",
    "HttpResult",
    "HttpService",
    "ParamSpec",
    "ProposeHttp",
    "ProposeSsh",
    "Reply",
    "ReplyError",
    "ReplyOk",
    "SealedBody",
    "SshCommand",
    "SshExecResult",
    "SshHost",
    "audit",
    "config",
    "parse_gateway_policy",
    "policy_digest",
    "wire",
]
