"""Generate the JSON Schema file of every contract: ``python -m safeport.shared.schemas``.

The adapters here are the very ones the gateway and its clients validate with, so a file on
disk can only match the code if it was generated from it (a test compares the two).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from safeport.shared.schemas.audit import AuditRecord
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.control import CONTROL_REQUEST
from safeport.shared.schemas.operations import AGENT_RESULTS, CONTROL_OPS
from safeport.shared.schemas.replies import REPLY
from safeport.shared.schemas.results import APPROVAL_EVENT
from safeport.shared.schemas.wire import (
    AGENT_REQUEST,
    Cancel,
    CatalogRequest,
    Hello,
    PendingNotice,
    ProposeHttp,
    ProposeSql,
    ProposeSsh,
    Welcome,
)

SCHEMA_DIR = Path(__file__).parent


def _by_name(title: str, models: dict[str, type[BaseModel]]) -> type[BaseModel]:
    """One object whose property per operation is that operation's result: what an ``ok``
    reply's ``result`` holds, told apart by the request it answers (the reply does not repeat
    it)."""
    fields: dict[str, Any] = {
        name.replace(".", "_"): (model, Field(alias=name)) for name, model in models.items()
    }
    built: type[BaseModel] = create_model(title, __config__=ConfigDict(extra="forbid"), **fields)
    return built


CONTROL_RESULTS = _by_name("ControlResults", {name: op.result for name, op in CONTROL_OPS.items()})
# The agent's requests by what tells them apart on the wire: ``type``, and a proposal's action.
AGENT_RESULTS_BY_NAME = _by_name(
    "AgentResults",
    {
        "hello": AGENT_RESULTS[Hello],
        "catalog": AGENT_RESULTS[CatalogRequest],
        "cancel": AGENT_RESULTS[Cancel],
        "propose.ssh_exec": AGENT_RESULTS[ProposeSsh],
        "propose.http_request": AGENT_RESULTS[ProposeHttp],
        "propose.run_readonly_query": AGENT_RESULTS[ProposeSql],
    },
)

EXPORTED: dict[str, TypeAdapter[Any] | type[BaseModel]] = {
    "agent_request": AGENT_REQUEST,
    "control_request": CONTROL_REQUEST,
    "reply": REPLY,
    "control_result": CONTROL_RESULTS,
    "agent_result": AGENT_RESULTS_BY_NAME,
    "approval_event": APPROVAL_EVENT,
    "catalog": Catalog,
    "pending_notice": PendingNotice,
    "welcome": Welcome,
    "audit_record": AuditRecord,
    "gateway_policy": GatewayPolicy,
}


def rendered_schemas() -> dict[str, str]:
    """File name → JSON text, exactly as written to disk."""
    out: dict[str, str] = {}
    for name, model in EXPORTED.items():
        schema = (
            model.json_schema()
            if isinstance(model, TypeAdapter)
            else model.model_json_schema(by_alias=True)
        )
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": name,
            **schema,
        }
        out[f"{name}.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def write_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    written = []
    for name, text in rendered_schemas().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
