"""`[sources.openbao.NAME]` and a credential's origin: what parses, what is refused and why,
and how a change of where a credential comes from reads in `sp policy accept`'s diff."""

from __future__ import annotations

import pytest

from safeport.action_gateway.policy.meaning import meaning_changes
from safeport.action_gateway.policy.review import review
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy

SERVER = """
[sources.openbao.team]
address = "https://bao.example.com:8200"
ca_file = "/etc/safeport/bao-ca.pem"
auth = { method = "approle", role_id = "r-1", secret_id_credential = "bao-secret-id" }

[credentials.bao-secret-id]
kind = "token"
"""


def parsed(extra: str, server: str = SERVER) -> object:
    return parse_gateway_policy(server + extra)[0]


def refused(extra: str, server: str = SERVER) -> str:
    with pytest.raises(ConfigError) as error:
        parse_gateway_policy(server + extra)
    return error.value.message


def test_a_kv_an_ssh_and_a_database_credential_from_a_declared_server_parse() -> None:
    policy = parse_gateway_policy(
        SERVER
        + """
[credentials.api]
kind = "token"
source = "team"
kv_path = "deploy/api"
kv_field = "token"

[credentials.box]
kind = "ssh-key"
source = "team"
ssh_role = "ops"
ttl_s = 30

[credentials.db]
kind = "basic"
source = "team"
database_role = "reader"
"""
    )[0]
    assert policy.credentials["api"].kv_path == "deploy/api"
    assert policy.credentials["box"].ttl_s == 30
    assert policy.credentials["db"].database_role == "reader"
    assert policy.credentials["bao-secret-id"].source == "vault"  # the default


def test_an_undeclared_server_is_refused_and_nothing_falls_back_to_the_vault() -> None:
    text = '\n[credentials.api]\nkind = "token"\nsource = "other"\nkv_path = "a"\nkv_field = "b"\n'
    assert "undeclared source 'other'" in refused(text)


def test_a_server_credential_must_say_where_its_value_lives() -> None:
    assert "needs ['kv_field']" in refused(
        '\n[credentials.api]\nkind = "token"\nsource = "team"\nkv_path = "a"\n'
    )
    assert "needs ['ssh_role']" in refused('\n[credentials.k]\nkind = "ssh-key"\nsource = "team"\n')
    assert "does not take ['kv_path', 'kv_field']" in refused(
        '\n[credentials.k]\nkind = "ssh-key"\nsource = "team"\nssh_role = "ops"\n'
        'kv_path = "a"\nkv_field = "b"\n'
    )


def test_a_local_credential_cannot_name_a_server_path() -> None:
    assert "need a server" in refused('\n[credentials.api]\nkind = "token"\nkv_path = "a"\n')


def test_a_path_or_role_with_traversal_or_a_template_is_refused() -> None:
    for path in ("../sys/raw", "a/../../b", "a/{name}", "a?x=1", "/abs"):
        message = refused(
            f'\n[credentials.api]\nkind = "token"\nsource = "team"\nkv_path = "{path}"\n'
            'kv_field = "token"\n'
        )
        assert "kv_path" in message, path


def test_the_approle_secret_id_must_be_a_token_kept_in_the_local_vault() -> None:
    server = SERVER.replace('[credentials.bao-secret-id]\nkind = "token"', "")
    assert "secret_id_credential 'bao-secret-id'" in refused("", server)
    basic = SERVER.replace(
        '[credentials.bao-secret-id]\nkind = "token"', '[credentials.bao-secret-id]\nkind = "basic"'
    )
    assert "secret_id_credential 'bao-secret-id'" in refused("", basic)


def test_a_server_address_must_be_https_and_a_server_cannot_be_named_vault() -> None:
    assert "https://" in refused("", SERVER.replace("https://bao", "http://bao"))
    assert "'vault'" in refused("", SERVER.replace("openbao.team", "openbao.vault"))


def test_a_token_file_login_needs_an_absolute_path_and_no_approle_keys() -> None:
    server = SERVER.replace(
        'auth = { method = "approle", role_id = "r-1", secret_id_credential = "bao-secret-id" }',
        'auth = { method = "token-file", token_file = "/etc/safeport/bao-token" }',
    )
    assert parsed("", server) is not None
    assert "absolute path" in refused("", server.replace("/etc/safeport/bao-token", "bao-token"))


def test_moving_a_credential_to_another_server_or_path_reads_as_a_loosening() -> None:
    base = SERVER + (
        '\n[credentials.api]\nkind = "token"\nsource = "team"\nkv_path = "deploy/api"\n'
        'kv_field = "token"\n'
    )
    before = parse_gateway_policy(base)[0]
    after = parse_gateway_policy(base.replace('"deploy/api"', '"deploy/prod"'))[0]
    changes = meaning_changes(before, after)
    assert [c.weight for c in changes] == ["loosened"]
    assert "kv_path" in changes[0].text


def test_policy_check_asks_the_vault_only_for_the_credentials_kept_there() -> None:
    text = SERVER + (
        '\n[credentials.api]\nkind = "token"\nsource = "team"\nkv_path = "deploy/api"\n'
        'kv_field = "token"\n'
    )
    policy = parse_gateway_policy(text)[0]
    problems = [problem.text() for problem in review(policy, text, {})]
    assert len(problems) == 1 and "'bao-secret-id' is not in the vault" in problems[0]
