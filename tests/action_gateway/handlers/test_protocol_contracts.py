"""The gateway speaks the shared models: its operations are the schema's, the catalog it
builds is the one the context server parses, and a schema refusal never quotes the input."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from harness.gateway import POLICY
from safeport.action_gateway.handlers.control_sock import OPERATIONS
from safeport.action_gateway.policy.catalog import catalog_of
from safeport.action_gateway.sockets.connection import parse_request
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.schemas.control import CONTROL_REQUEST, control_ops
from safeport.shared.schemas.export import SCHEMA_DIR

CANARY = "CANARY-PASSPHRASE-9b2c"


def _on_disk(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return schema


def test_the_gateway_serves_exactly_the_operations_the_schema_names() -> None:
    on_disk = set(_on_disk("control_request.json")["discriminator"]["mapping"])
    assert set(OPERATIONS) == control_ops() == on_disk
    assert len(on_disk) == 32


def test_the_catalog_the_gateway_builds_matches_its_schema_and_parses_back() -> None:
    policy, digest = parse_gateway_policy(POLICY)
    sent = catalog_of(policy, digest).wire_form()
    jsonschema.validate(sent, _on_disk("catalog.json"))
    assert Catalog.model_validate(sent).wire_form() == sent
    by_name = {a.get("command_id") or a.get("operation_id"): a for a in sent["actions"]}
    assert by_name["tail_log"]["params"] == {
        "lines": {"type": "integer", "minimum": 1, "maximum": 500}
    }
    assert by_name["read_service_status"]["params"]["service"] == {
        "type": "string",
        "maxLength": 256,
        "pattern": "^[a-z0-9-]{1,48}$",
    }
    assert by_name["deployment_status"]["method"] == "GET"
    # Never where an action goes or with what: no address, user, URL or credential name.
    text = json.dumps(sent)
    for secret_place in ("203.0.113.7", 'deploy"', "api.example.com", "build-key"):
        assert secret_place not in text


def test_a_schema_refusal_names_where_but_never_quotes_the_input() -> None:
    message = {
        "v": 1,
        "id": "t",
        "type": "control",
        "op": "vault.unlock",
        "params": {"passphrase": CANARY * 400},
    }
    request, problem = parse_request(CONTROL_REQUEST, message)
    assert request is None and problem is not None
    assert "params.passphrase" in problem and CANARY not in problem
    message["params"] = {"passphrase": CANARY}
    request, problem = parse_request(CONTROL_REQUEST, message)
    assert problem is None and request is not None and request.op == "vault.unlock"
