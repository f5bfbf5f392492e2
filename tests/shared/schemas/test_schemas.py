"""The exported JSON Schemas match the models, and the policy parser is strict."""

from __future__ import annotations

import re

import pytest

from safeport.errors import ConfigError
from safeport.shared.schemas import parse_gateway_policy
from safeport.shared.schemas.export import SCHEMA_DIR, rendered_schemas

EXAMPLE = """
[gateway]
approval_timeout_s = 120

[credentials.deploy-token]
kind = "token"
approval = "session"

[credentials.build-key]
kind = "ssh-key"
approval = "per-call"

[ssh.hosts.build-staging]
address = "203.0.113.7"
port = 22
user = "deploy"
host_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample"]
credential = "build-key"

[ssh.hosts.build-staging.commands.read_service_status]
argv = ["systemctl", "status", "--no-pager", "{service}"]
timeout_s = 10
max_output_bytes = 65536
params.service = { pattern = "^[a-z0-9-]{1,48}$" }

[http.services.deploy-api]
base_url = "https://api.example.com"
credential = "deploy-token"
auth = "bearer"

[http.services.deploy-api.operations.deployment_status]
method = "GET"
path = "/v1/{environment}/services/{service}/status"
response_fields = ["environment", "service", "state", "revision"]
params.environment = { enum = ["staging", "production"] }
params.service = { pattern = "^[a-z0-9-]{1,48}$" }
"""


def test_exported_schema_files_are_in_sync_with_the_models() -> None:
    for name, text in rendered_schemas().items():
        on_disk = (SCHEMA_DIR / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: run `python -m safeport.shared.schemas`"


def test_the_design_example_policy_parses() -> None:
    policy, digest = parse_gateway_policy(EXAMPLE)
    assert len(digest) == 64
    command = policy.ssh.hosts["build-staging"].commands["read_service_status"]
    assert command.argv[-1] == "{service}"
    assert policy.http.services["deploy-api"].operations["deployment_status"].method == "GET"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[gateway]", "[gateway]\nsurprise = 1"), "line 3: unknown key `gateway.surprise`"),
        (('base_url = "https://api.example.com"', 'base_url = "http://api.example.com"'), "https"),
        (
            ('host_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample"]', "host_keys = []"),
            "host_keys",
        ),
        (('credential = "build-key"', 'credential = "nope"'), "undeclared credential"),
        (
            ('{ pattern = "^[a-z0-9-]{1,48}$" }\n\n[http', '{ pattern = "(" }\n\n[http'),
            "regular expression",
        ),
        (('params.environment = { enum = ["staging", "production"] }', ""), "undeclared params"),
        (("[gateway]", "[gateway"), "not valid TOML"),
    ],
)
def test_invalid_policies_are_config_errors_that_say_where(
    edit: tuple[str, str], message: str
) -> None:
    text = EXAMPLE.replace(edit[0], edit[1], 1)
    with pytest.raises(ConfigError) as caught:
        parse_gateway_policy(text)
    diagnostic = caught.value.diagnostic()
    assert message in diagnostic
    # In the words of the policy, with the line to look at; never pydantic's own wording.
    assert "Value error" not in diagnostic and "top level" not in diagnostic
    assert "Input should" not in diagnostic
    found = re.search(r"line (\d+)", diagnostic)
    assert found, diagnostic
    line = int(found.group(1))
    if "not valid TOML" not in diagnostic and edit[1]:
        # The edited line itself, or the header of the table whose check failed.
        shown = text.splitlines()[line - 1]
        assert any(
            part.strip() in shown for part in edit[1].splitlines() if part
        ) or shown.startswith("["), shown


def test_a_param_with_two_constraints_is_refused() -> None:
    text = EXAMPLE.replace(
        '{ enum = ["staging", "production"] }', '{ enum = ["staging"], pattern = "^s$" }'
    )
    with pytest.raises(ConfigError, match="exactly one"):
        parse_gateway_policy(text)


def test_an_operation_cannot_declare_the_authorization_header() -> None:
    text = EXAMPLE.replace(
        'response_fields = ["environment"',
        'headers = { Authorization = "x" }\nresponse_fields = ["environment"',
    )
    with pytest.raises(ConfigError, match="set by the gateway"):
        parse_gateway_policy(text)


def test_shell_variable_syntax_in_argv_is_literal_text_not_a_param() -> None:
    text = EXAMPLE.replace(
        'argv = ["systemctl", "status", "--no-pager", "{service}"]',
        'argv = ["sh", "-c", "echo ${HOME}", "{service}"]',
    )
    policy, _ = parse_gateway_policy(text)
    assert (
        policy.ssh.hosts["build-staging"].commands["read_service_status"].argv[2] == "echo ${HOME}"
    )


@pytest.mark.parametrize("key_type", ["ssh-dss", "sk-ssh-ed25519@openssh.com", "ssh-foo"])
def test_host_key_types_that_cannot_be_pinned_are_refused(key_type: str) -> None:
    text = EXAMPLE.replace("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample", f"{key_type} AAAAB3Nz")
    with pytest.raises(ConfigError, match="cannot be pinned"):
        parse_gateway_policy(text)


def test_bearer_auth_with_a_basic_credential_is_refused() -> None:
    text = EXAMPLE.replace(
        '[credentials.deploy-token]\nkind = "token"', '[credentials.deploy-token]\nkind = "basic"'
    )
    with pytest.raises(ConfigError, match="cannot use a basic credential"):
        parse_gateway_policy(text)
