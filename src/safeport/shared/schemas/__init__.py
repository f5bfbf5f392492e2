"""Contracts shared by both processes: wire messages, audit records, gateway policy.

The JSON Schema files beside this module are generated from these models by
``python -m safeport.shared.schemas`` and kept in sync by a test. Other packages import the
names below or the contract modules themselves (``audit``, ``catalog``, ``config``,
``config_params``, ``config_sources``, ``control``, ``key_wire``, ``oauth_wire``, ``operations``,
``replies``, ``results``, ``wire``).
"""

# ErrorCode lives beside the errors that carry it (the lowest floor); it stays a name here.
from safeport.errors import ErrorCode
from safeport.shared.schemas import config_sources, key_wire, oauth_wire, operations, results
from safeport.shared.schemas.audit import AuditRecord, SealedBody
from safeport.shared.schemas.catalog import (
    Catalog,
    CatalogEntry,
    HttpCatalogEntry,
    IntegerParam,
    ParamSchema,
    SqlCatalogEntry,
    SshCatalogEntry,
    StringParam,
)
from safeport.shared.schemas.config import (
    Credential,
    GatewayPolicy,
    HttpOperation,
    HttpService,
    SshCommand,
    SshHost,
    parse_gateway_policy,
    policy_digest,
)
from safeport.shared.schemas.config_params import ParamSpec
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
    Hello,
    HttpResult,
    ProposeHttp,
    ProposeSql,
    ProposeSsh,
    ResultRedaction,
    SqlResult,
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
    "ProposeSql",
    "ProposeSsh",
    "Reply",
    "ReplyError",
    "ReplyOk",
    "ResultRedaction",
    "SealedBody",
    "SqlCatalogEntry",
    "SqlResult",
    "SshCatalogEntry",
    "SshCommand",
    "SshExecResult",
    "SshHost",
    "StringParam",
    "audit",
    "catalog",
    "config",
    "config_params",
    "config_sources",
    "config_sql",
    "control",
    "control_ops",
    "error_reply",
    "key_wire",
    "oauth_wire",
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
