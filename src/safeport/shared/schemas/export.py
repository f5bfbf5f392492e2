"""Generate the JSON Schema file of every contract: ``python -m safeport.shared.schemas``."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

from safeport.shared.schemas.audit import AuditRecord
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.wire import (
    AgentRequest,
    ControlRequest,
    PendingNotice,
    Reply,
    Welcome,
)

SCHEMA_DIR = Path(__file__).parent


def rendered_schemas() -> dict[str, str]:
    """File name → JSON text, exactly as written to disk."""
    adapters: dict[str, TypeAdapter[object] | type[BaseModel]] = {
        "agent_request": TypeAdapter(AgentRequest),
        "control_request": ControlRequest,
        "reply": TypeAdapter(Reply),
        "pending_notice": PendingNotice,
        "welcome": Welcome,
        "audit_record": AuditRecord,
        "gateway_policy": GatewayPolicy,
    }
    out: dict[str, str] = {}
    for name, model in adapters.items():
        schema = (
            model.json_schema() if isinstance(model, TypeAdapter) else model.model_json_schema()
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
