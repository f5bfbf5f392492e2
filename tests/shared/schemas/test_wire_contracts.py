"""The wire protocol is typed once: replies, the catalog and control requests are the models
in shared/schemas, the exported JSON Schemas are generated from the very adapters the code
validates with, and what the code builds matches the files on disk."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter, ValidationError

from safeport.errors import WireError
from safeport.shared.schemas.catalog import Catalog
from safeport.shared.schemas.control import (
    CONTROL_REQUEST,
    ControlRequest,
    VaultAddRequest,
    VaultLockRequest,
)
from safeport.shared.schemas.export import EXPORTED, SCHEMA_DIR, rendered_schemas
from safeport.shared.schemas.replies import (
    REPLY,
    ReplyError,
    ReplyOk,
    error_reply,
    ok_reply,
    parse_reply,
    wire_form,
)
from safeport.shared.schemas.wire import AGENT_REQUEST, CancelResult

CANARY = "CANARY-PASSPHRASE-5e1d"


def _on_disk(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return schema


def _control(op: str, **params: object) -> dict[str, object]:
    return {"v": 1, "id": "t1", "type": "control", "op": op, "params": params}


# -- the exported files are the code's own contracts --------------------------------------------


def test_the_exported_schemas_come_from_the_adapters_the_code_validates_with() -> None:
    assert EXPORTED["control_request"] is CONTROL_REQUEST
    assert EXPORTED["agent_request"] is AGENT_REQUEST
    assert EXPORTED["reply"] is REPLY
    assert EXPORTED["catalog"] is Catalog


def test_a_changed_model_no_longer_matches_the_file_on_disk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What keeps the sync test honest: a model edit shows in what it renders."""
    monkeypatch.setitem(EXPORTED, "reply", TypeAdapter(ReplyOk))
    assert rendered_schemas()["reply.json"] != (SCHEMA_DIR / "reply.json").read_text()


def test_replies_the_gateway_builds_match_the_reply_schema_on_disk() -> None:
    schema = _on_disk("reply.json")
    jsonschema.validate(wire_form(ok_reply("r1", CancelResult(cancelled=False))), schema)
    jsonschema.validate(wire_form(error_reply("r2", "locked", "the vault is locked")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"v": 1, "id": "r3", "ok": True, "result": {}, "extra": 1}, schema)


def test_a_catalog_entry_carrying_an_address_or_a_credential_is_refused() -> None:
    entry = {
        "action": "ssh_exec",
        "host_id": "build-staging",
        "command_id": "uptime",
        "description": "",
        "read_only": True,
        "approval": "session",
        "params": {},
    }
    parsed = Catalog.model_validate({"policy": "d", "actions": [entry]})
    assert parsed.actions[0].target == "build-staging"
    for leak in ({"address": "203.0.113.7"}, {"credential": "build-key"}):
        with pytest.raises(ValidationError):
            Catalog.model_validate({"policy": "d", "actions": [{**entry, **leak}]})


# -- replies -------------------------------------------------------------------------------------


def test_parse_reply_reads_ok_and_error_replies() -> None:
    ok = parse_reply({"v": 1, "id": "a", "ok": True, "result": {"x": 1}})
    assert isinstance(ok, ReplyOk) and ok.result == {"x": 1}
    error = parse_reply(
        {"v": 1, "id": None, "ok": False, "error": {"code": "denied", "reason": "no"}}
    )
    assert isinstance(error, ReplyError) and error.error.code == "denied"


@pytest.mark.parametrize(
    "message",
    [
        {"v": 1, "id": "a", "ok": True, "result": {}, "surprise": 1},
        {"v": 1, "id": "a", "ok": False, "error": {"code": "oops", "reason": ""}},
        {"v": 1, "id": "a", "ok": True},
        {"v": 2, "id": "a", "ok": True, "result": {}},
        {"id": "a", "pending": {}},
    ],
)
def test_parse_reply_refuses_anything_outside_the_protocol(message: dict[str, Any]) -> None:
    with pytest.raises(WireError, match="outside the protocol"):
        parse_reply(message)


def test_an_error_reply_never_echoes_a_junk_id_and_keeps_its_reason_bounded() -> None:
    reply = wire_form(error_reply("bad id\n", "invalid", "x" * 5000))
    assert reply["id"] is None and len(reply["error"]["reason"]) == 1024
    assert list(reply) == ["v", "id", "ok", "error"]  # the keys and their order are the protocol's
    assert wire_form(error_reply("ok-id", "invalid", "r"))["id"] == "ok-id"


# -- control requests ----------------------------------------------------------------------------

_CONTROL: TypeAdapter[ControlRequest] = CONTROL_REQUEST


def test_each_operation_takes_exactly_its_params() -> None:
    value = {"token": {"secret_b64": "c2VjcmV0"}}
    add = _CONTROL.validate_python(
        _control("vault.add", passphrase=CANARY, name="t", kind="token", value=value)
    )
    assert isinstance(add, VaultAddRequest) and add.params.name == "t"
    lock = _CONTROL.validate_python(_control("vault.lock"))
    assert isinstance(lock, VaultLockRequest) and lock.params.passphrase is None
    refused = [
        _control("vault.add", passphrase=CANARY, name="t", kind="token", value=value, extra=1),
        _control("vault.add", passphrase=CANARY, name="t", kind="password", value=value),
        _control("vault.add", name="t", kind="token", value=value),  # no passphrase
        _control("vault.add", passphrase=CANARY, name="t", kind="token", value={}),
        _control("approvals.decide", id="c1", approve="yes"),
        _control("status", passphrase=CANARY),  # an operation that takes nothing
        _control("vault.dump"),
        {**_control("status"), "surprise": True},
    ]
    for message in refused:
        with pytest.raises(ValidationError):
            _CONTROL.validate_python(message)


def test_a_passphrase_never_shows_in_a_request_repr_or_a_schema_error() -> None:
    request = _CONTROL.validate_python(_control("vault.unlock", passphrase=CANARY))
    assert CANARY not in repr(request) and CANARY not in str(request)
    assert CANARY not in json.dumps(request.model_dump(mode="json"))
    with pytest.raises(ValidationError) as caught:
        _CONTROL.validate_python(_control("vault.unlock", passphrase=CANARY * 400))
    errors = caught.value.errors(include_input=False, include_url=False)
    assert CANARY not in repr(errors)
