"""Contracts shared by both processes: wire messages, audit records, gateway policy.

The JSON Schema files beside this module are generated from these models by
``python -m safeport.shared.schemas`` and kept in sync by a test. Other packages import the
names below or the contract modules themselves (``audit``, ``catalog``, ``config``,
``control``, ``operations``, ``replies``, ``results``, ``wire``).
"""

from safeport.shared.schemas import operations, results
from safeport.shared.schemas.audit import AuditRecord, SealedBody
from safeport.shared.schemas.catalog import (
    Catalog,
    CatalogEntry,
    HttpCatalogEntry,
    IntegerParam,
    ParamSchema,
    SshCatalogEntry,
    StringParam,
)
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
from safeport.shared.schemas.control import CONTROL_REQUEST, ControlRequest, control_ops
from safeport.shared.schemas.replies import (
    REPLY,
    ErrorBody,
    Reply,
    ReplyError,
    ReplyOk,
    error_reply,
    ok_reply,
    parse_reply,
    parse_result,
    readable_id,
)
from safeport.shared.schemas.wire import (
    AGENT_REQUEST,
    PROTOCOL_VERSION,
    AgentRequest,
    Cancel,
    CatalogRequest,
    ErrorCode,
    Hello,
    HttpResult,
    ProposeHttp,
    ProposeSsh,
    SshExecResult,
)

__all__ = [
    "AGENT_REQUEST",
    "CONTROL_REQUEST",
    "PROTOCOL_VERSION",
    "REPLY",
    "AgentRequest",
    "AuditRecord",
    "Cancel",
    "Catalog",
    "CatalogEntry",
    "CatalogRequest",
    "ControlRequest",
    "Credential",
    "ErrorBody",
    "ErrorCode",
    "GatewayPolicy",
    "Hello",
    "HttpCatalogEntry",
    "HttpOperation",
    "HttpResult",
    "HttpService",
    "IntegerParam",
    "ParamSchema",
    "ParamSpec",
    "ProposeHttp",
    "ProposeSsh",
    "Reply",
    "ReplyError",
    "ReplyOk",
    "SealedBody",
    "SshCatalogEntry",
    "SshCommand",
    "SshExecResult",
    "SshHost",
    "StringParam",
    "audit",
    "catalog",
    "config",
    "control",
    "control_ops",
    "error_reply",
    "ok_reply",
    "operations",
    "parse_gateway_policy",
    "parse_reply",
    "parse_result",
    "policy_digest",
    "readable_id",
    "replies",
    "results",
    "wire",
]
