"""Generate the JSON Schema file of every contract: ``python -m safeport.shared.schemas``.

The adapters here are the very ones the gateway and its clients validate with, so a file on
disk can only match the code if it was generated from it (a test compares the two).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from safeport.shared.schemas.audit import AuditRecord
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.config import GatewayPolicy
from safeport.shared.schemas.control import CONTROL_REQUEST
from safeport.shared.schemas.replies import REPLY
from safeport.shared.schemas.wire import AGENT_REQUEST, PendingNotice, Welcome

SCHEMA_DIR = Path(__file__).parent

EXPORTED: dict[str, TypeAdapter[Any] | type[BaseModel]] = {
    "agent_request": AGENT_REQUEST,
    "control_request": CONTROL_REQUEST,
    "reply": REPLY,
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
