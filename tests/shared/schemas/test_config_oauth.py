"""The [credentials.NAME.oauth] table: https only, strict scopes, local vault only, and only where
a bearer (or a named header) can carry it."""

from __future__ import annotations

import pytest

from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.schemas.config_oauth import OAuthGrantSpec

GRANT = """
[credentials.tracker]
kind = "oauth"
approval = "per-call"

[credentials.tracker.oauth]
{oauth}
"""
SERVICE = """
[http.services.linear]
base_url = "https://api.linear.app"
credential = "tracker"
{service}
"""


def _policy(oauth: str = 'preset = "linear"\nclient_id = "abc123"', service: str = "") -> str:
    return GRANT.format(oauth=oauth) + SERVICE.format(service=service)


def _refused(text: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_gateway_policy(text)


def test_a_grant_by_preset_issuer_or_endpoints_is_accepted() -> None:
    policy, _ = parse_gateway_policy(_policy())
    grant = policy.credentials["tracker"]
    assert grant.kind == "oauth" and grant.oauth is not None
    assert grant.oauth.preset == "linear" and grant.oauth.scopes is None
    assert grant.oauth.client_auth is None and grant.oauth.timeout_s == 10
    for oauth in (
        'issuer = "https://idp.example.com"\nclient_id = "c"',
        'issuer = "https://accounts.google.com"\nclient_id = "c"',
        'issuer = "https://idp.example.com/realms/a"\nclient_id = "c"',
        'issuer = "https://idp.example.com:8443"\nclient_id = "c"\nca_file = "/etc/ca.pem"',
        'token_endpoint = "https://as.example/t"\nauthorization_endpoint = "https://as.example/a"'
        '\nclient_id = "c"\nscopes = ["read:org", "https://www.googleapis.com/auth/drive"]',
        'token_endpoint = "https://as.example/t"\ndevice_authorization_endpoint = '
        '"https://as.example/d"\nclient_id = "c"\nclient_auth = "client_secret_basic"',
    ):
        parse_gateway_policy(_policy(oauth))
    for auth in ('auth = "bearer"', 'auth = "header:X-Api-Key"'):
        parse_gateway_policy(_policy(service=auth))


@pytest.mark.parametrize(
    "issuer",
    [
        "http://idp.example.com",
        "HTTPS://idp.example.com",
        "https://IDP.example.com",
        "https://user:pw@idp.example.com",
        "https://idp.example.com/#frag",
        "https://idp.example.com/?tenant=a",
        "https:/idp.example.com",
        "idp.example.com",
        "ftp://idp.example.com",
        "https://idp.example.com:443",
        "https://idp.example.com\\@evil.example",
        "https://idp.example.com/ x",
    ],
)
def test_an_issuer_that_is_not_an_exact_https_url_is_refused(issuer: str) -> None:
    _refused(_policy(f'issuer = "{issuer}"\nclient_id = "c"'.replace("\\", "\\\\")), "issuer")


@pytest.mark.parametrize(
    "field",
    [
        "authorization_endpoint",
        "token_endpoint",
        "device_authorization_endpoint",
        "revocation_endpoint",
    ],
)
@pytest.mark.parametrize(
    "url",
    [
        "http://idp.example.com/token",
        "http://127.0.0.1:8080/token",
        "https://idp.example.com/token#x",
        "https://u@idp.example.com/token",
        "https://0x7f.1/token",
        "/token",
    ],
)
def test_an_endpoint_that_is_not_an_exact_https_url_is_refused(field: str, url: str) -> None:
    _refused(_policy(f'preset = "linear"\nclient_id = "c"\n{field} = "{url}"'), field)


@pytest.mark.parametrize(
    ("oauth", "match"),
    [
        ('preset = "linear"\nclient_id = "c"\nca_file = "ca.pem"', "absolute"),
        ('preset = "linear"\nclient_id = "c"\nscopes = ["read write"]', "scopes"),
        ('preset = "linear"\nclient_id = "c"\nscopes = ["a\\"b"]', "scopes"),
        ('preset = "linear"\nclient_id = "c"\nscopes = ["a\\\\b"]', "scopes"),
        ('preset = "linear"\nclient_id = "c"\nscopes = [""]', "scopes"),
        ('preset = "linear"\nclient_id = "c"\nscopes = ["é"]', "scopes"),
        ('preset = "linear"\nclient_id = "c"\nscopes = ["read", "read"]', "twice"),
        ('preset = "linear"\nclient_id = "my client"', "client_id"),
        ('preset = "linear"\nclient_id = ""', "client_id"),
        ('preset = "linear"', "client_id"),
        ('preset = "okta"\nclient_id = "c"', "preset"),
        ('preset = "linear"\nclient_id = "c"\nclient_auth = "private_key_jwt"', "client_auth"),
        ('preset = "linear"\nclient_id = "c"\nrefresh_token = "x"', "refresh_token"),
        ('preset = "linear"\nclient_id = "c"\ntimeout_s = 0', "timeout_s"),
        ('preset = "linear"\nclient_id = "c"\nmax_response_bytes = 99999999', "max_response"),
        ('client_id = "c"', "preset"),
        ('client_id = "c"\nauthorization_endpoint = "https://as.example/a"', "token_endpoint"),
        ('client_id = "c"\ntoken_endpoint = "https://as.example/t"', "authorization_endpoint"),
    ],
)
def test_a_malformed_grant_is_refused(oauth: str, match: str) -> None:
    _refused(_policy(oauth), match)


def test_the_kind_and_the_table_go_together() -> None:
    _refused(_policy().replace('kind = "oauth"', 'kind = "token"'), "oauth")
    without_table = '[credentials.tracker]\nkind = "oauth"\n' + SERVICE.format(service="")
    _refused(without_table, "oauth")


def test_a_grant_lives_in_the_local_vault() -> None:
    source = """
[sources.openbao.team]
address = "https://bao.example.com:8200"
ca_file = "/etc/bao-ca.pem"
auth = { method = "token-file", token_file = "/etc/bao-token" }
"""
    text = _policy().replace('approval = "per-call"', 'approval = "per-call"\nsource = "team"')
    _refused(source + text, "local vault")
    with_path = 'approval = "per-call"\nsource = "team"\nkv_path = "x"\nkv_field = "y"'
    _refused(source + _policy().replace('approval = "per-call"', with_path), "local vault")


def test_a_grant_is_never_sent_as_basic_auth_nor_used_by_ssh_or_sql() -> None:
    _refused(_policy(service='auth = "basic"'), "basic")
    ssh = """
[ssh.hosts.box]
address = "box.example"
user = "deploy"
host_keys = ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"]
credential = "tracker"
"""
    _refused(_policy() + ssh, "ssh-key")
    sql = """
[sql.databases.shop]
host = "db.example"
database = "shop"
user = "reader"
credential = "tracker"
ca_pem = "-----BEGIN CERTIFICATE-----"
"""
    _refused(_policy() + sql, "token credential")


def test_the_spec_is_frozen_and_strict() -> None:
    spec = OAuthGrantSpec.model_validate({"preset": "github", "client_id": "Iv1.abc"})
    with pytest.raises(ValueError):
        spec.client_id = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        OAuthGrantSpec.model_validate({"preset": "github", "client_id": 123})
    with pytest.raises(ValueError):
        OAuthGrantSpec.model_validate({"preset": "github", "client_id": "c", "timeout_s": "5"})
