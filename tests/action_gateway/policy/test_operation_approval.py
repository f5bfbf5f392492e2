"""An action's own `approval` only tightens what its credential grants, `read_only` is refused on
a write method, and a misspelt key is answered with the nearest key allowed at that place."""

from __future__ import annotations

import pytest

from safeport.action_gateway.ladder.resolve import session_covers
from safeport.action_gateway.policy.meaning import meaning_changes
from safeport.errors import ConfigError
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy
from safeport.shared.schemas.config_problems import allowed_keys

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def _policy(credential: str, operation: str, command: str = "") -> str:
    return f"""
[credentials.tok]
kind = "token"
{credential}

[credentials.key]
kind = "ssh-key"
{credential}

[http.services.api]
base_url = "https://api.example.com"
credential = "tok"

[http.services.api.operations.op]
path = "/x"
{operation}

[ssh.hosts.box]
address = "box.example.com"
user = "deploy"
host_keys = ["{KEY}"]
credential = "key"

[ssh.hosts.box.commands.cmd]
argv = ["true"]
{command}
"""


def _refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_gateway_policy(text)
    return caught.value.message


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_read_only_on_a_write_method_is_refused_naming_the_method(method: str) -> None:
    text = _policy("", f'method = "{method}"\nread_only = true')
    message = _refusal(text)
    assert f"`read_only = true` with method {method}" in message
    assert "operations.op" in message


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_read_only_on_a_reading_method_is_accepted(method: str) -> None:
    parse_gateway_policy(_policy("", f'method = "{method}"\nread_only = true'))


def test_session_on_a_per_call_credential_is_refused_unless_the_action_is_read_only() -> None:
    message = _refusal(_policy("", 'method = "GET"\napproval = "session"'))
    assert "credential 'tok' is approved per call" in message
    assert "http service 'api' operation 'op'" in message and "read_only = true" in message
    lines = _policy("", 'method = "GET"\napproval = "session"').splitlines()
    line = int(message.split("line ")[1].split(":")[0])
    assert lines[line - 1] == "[http.services.api.operations.op]"
    message = _refusal(_policy("", 'method = "GET"', 'approval = "session"'))
    assert "ssh host 'box' command 'cmd'" in message
    policy, _ = parse_gateway_policy(
        _policy(
            "",
            'method = "GET"\nread_only = true\napproval = "session"',
            'read_only = true\napproval = "session"',
        )
    )
    assert session_covers(policy, "tok") == ("api.op",)
    assert session_covers(policy, "key") == ("box.cmd",)


def test_per_call_on_a_session_credential_tightens_and_is_accepted() -> None:
    policy, _ = parse_gateway_policy(
        _policy('approval = "session"', 'method = "POST"\napproval = "per-call"')
    )
    assert session_covers(policy, "tok") == ()
    assert session_covers(policy, "key") == ("box.cmd",)  # no approval of its own


def test_the_meaning_of_an_actions_approval_follows_its_credential() -> None:
    base, _ = parse_gateway_policy(_policy('approval = "session"', 'method = "POST"'))
    tight, _ = parse_gateway_policy(
        _policy('approval = "session"', 'method = "POST"\napproval = "per-call"')
    )
    same, _ = parse_gateway_policy(
        _policy('approval = "session"', 'method = "POST"\napproval = "session"')
    )
    [tightened] = meaning_changes(base, tight)
    assert tightened.weight == "tightened" and "every call now needs its own approval" in (
        tightened.text
    )
    [loosened] = meaning_changes(tight, base)
    assert loosened.weight == "loosened" and "whole session" in loosened.text
    [neutral] = meaning_changes(base, same)
    assert neutral.weight == "changed"


@pytest.mark.parametrize(
    ("typo", "suggested"),
    [
        ("body", "json_body"),
        ("jsonbody", "json_body"),
        ("header", "headers"),
        ("readonly", "read_only"),
        ("aproval", "approval"),
        ("response_field", "response_fields"),
    ],
)
def test_a_misspelt_operation_key_is_answered_with_the_nearest_key(
    typo: str, suggested: str
) -> None:
    message = _refusal(_policy("", f'method = "GET"\n{typo} = {{}}'))
    assert f"unknown key `http.services.api.operations.op.{typo}`" in message
    assert message.endswith(f"did you mean `{suggested}`?")


def test_misspelt_keys_elsewhere_are_answered_too() -> None:
    gateway = _refusal("[gateway]\nsesion_max_minutes = 5\n")
    assert gateway.endswith("did you mean `session_max_minutes`?")
    host = _refusal(_policy("", 'method = "GET"', "timeout = 5"))
    assert host.endswith("did you mean `timeout_s`?")
    param = _refusal(
        _policy("", 'method = "GET"\npath = "/{x}"\nparams.x = { patern = "^a$" }').replace(
            'path = "/x"\n', ""
        )
    )
    assert param.endswith("did you mean `pattern`?")
    far = _refusal('[credentials.tok]\nkind = "token"\nzzz = 1\n')
    allowed = far.partition("keys allowed here: ")[2]
    for key in ("kind", "approval", "rate_per_minute", "approval_factor", "source", "kv_path"):
        assert f"`{key}`" in allowed, key


def test_allowed_keys_steps_over_names_and_list_positions() -> None:
    assert "json_body" in allowed_keys(GatewayPolicy, ["http", "services", "a", "operations", "b"])
    assert "exe" in allowed_keys(GatewayPolicy, ["callers", "rules", "0"])
    assert allowed_keys(GatewayPolicy, ["http", "services", "a", "operations", "b", "query"]) == ()
    assert allowed_keys(GatewayPolicy, ["nowhere"]) == ()
