"""Declared response fields only, and never the credential."""

from __future__ import annotations

import json

import pytest

from safeport.action_gateway.executors.https.response_contract import (
    extract_fields,
    refuse_credential_echo,
)
from safeport.action_gateway.executors.interface import ActionError

BODY = json.dumps(
    {"state": "ok", "deploy": {"rev": 7, "items": [{"id": "a"}, {"id": "b"}]}, "extra": "x"}
).encode()


def test_declared_dotted_fields_are_returned_and_nothing_else() -> None:
    fields = extract_fields(BODY, ["state", "deploy.rev", "deploy.items.1.id"], service_id="s")
    assert fields == {"state": "ok", "deploy.rev": 7, "deploy.items.1.id": "b"}


@pytest.mark.parametrize("path", ["missing", "deploy.nope", "deploy.items.5.id", "state.x"])
def test_a_missing_field_is_a_clear_error(path: str) -> None:
    with pytest.raises(ActionError, match="without the field") as caught:
        extract_fields(BODY, [path], service_id="s")
    assert caught.value.failure == "bad_response"


@pytest.mark.parametrize("body", [b"<html>", b"\xff\xfe", b""])
def test_a_body_that_is_not_json_is_a_clear_error(body: bytes) -> None:
    with pytest.raises(ActionError, match="did not answer with JSON"):
        extract_fields(body, ["state"], service_id="s")


@pytest.mark.parametrize(
    "value",
    [
        "Bearer CANARY-token",
        {"headers": {"Authorization": "Bearer CANARY-token"}},
        ["x", {"CANARY-token": 1}],
        "prefixCANARY-tokensuffix",
    ],
)
def test_a_field_that_contains_the_credential_withholds_the_whole_result(value: object) -> None:
    with pytest.raises(ActionError, match="echoed the credential") as caught:
        refuse_credential_echo({"f": value}, ["CANARY-token"], service_id="s")
    assert "CANARY" not in caught.value.diagnostic()


def test_fields_without_the_credential_pass() -> None:
    refuse_credential_echo({"f": {"a": [1, "b", None]}}, ["CANARY-token", ""], service_id="s")
