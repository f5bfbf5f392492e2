"""The oauth credential `sp policy add http --oauth` writes: valid for every preset, never put
in place of a credential of another kind however that one is written, and with names that stay
inside their table headers."""

from __future__ import annotations

import tomllib

import pytest

from safeport.action_gateway.oauth.presets import PRESETS
from safeport.authoring.oauth_scaffold import OAuthDraft
from safeport.authoring.scaffold import (
    HttpServiceDraft,
    SshHostDraft,
    add_http_service,
    add_ssh_host,
)
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy

EMPTY = "[gateway]\napproval_timeout_s = 120\n"
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


def _draft(credential: str, preset: str = "github", name: str = "api") -> HttpServiceDraft:
    return HttpServiceDraft(
        name, "https://api.example.com", credential, ("get=GET /v1/{item}",),
        OAuthDraft(preset, "client-1"),
    )  # fmt: skip


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_writes_a_policy_that_validates(preset: str) -> None:
    text = add_http_service(EMPTY, _draft(f"{preset}-grant", preset))
    table = tomllib.loads(text)["credentials"][f"{preset}-grant"]
    assert table["kind"] == "oauth" and table["oauth"]["preset"] == preset
    assert table["oauth"]["client_auth"] == PRESETS[preset].client_auth
    assert tuple(table["oauth"]["scopes"]) == PRESETS[preset].default_scopes
    policy = parse_gateway_policy(text)[0]
    assert policy.credentials[f"{preset}-grant"].kind == "oauth"
    assert policy.http.services["api"].credential == f"{preset}-grant"


@pytest.mark.parametrize(
    "declared",
    [
        '[credentials.gh]\nkind = "token"\n',
        '[credentials."gh"]\nkind = "token"\n',
        '[ credentials . gh ]\nkind = "basic"\n',
        '[credentials]\ngh = { kind = "token" }\n',
        '[credentials.gh]\nkind = "ssh-key"\n',
    ],
)
def test_a_credential_of_another_kind_is_never_taken_for_the_grant(declared: str) -> None:
    with pytest.raises(ConfigError, match=r"already declared with kind .* not an oauth grant"):
        add_http_service(EMPTY + "\n" + declared, _draft("gh"))


def test_a_credential_of_another_kind_in_dotted_keys_is_never_taken_for_the_grant() -> None:
    text = 'credentials.gh.kind = "token"\n\n' + EMPTY
    with pytest.raises(ConfigError, match="not an oauth grant"):
        add_http_service(text, _draft("gh"))


@pytest.mark.parametrize(
    "declared",
    [
        '[credentials.gh]\nkind = "oauth"\n[credentials.gh.oauth]\npreset = "github"\n'
        'client_id = "c"\n',
        '[credentials]\ngh = { kind = "oauth", oauth = { preset = "github", client_id = "c" } }\n',
    ],
)
def test_a_declared_oauth_credential_is_reused_however_it_is_written(declared: str) -> None:
    text = add_http_service(EMPTY + "\n" + declared, _draft("gh"))
    assert text.count("kind = ") == 1
    assert parse_gateway_policy(text)[0].http.services["api"].credential == "gh"


@pytest.mark.parametrize(
    "name",
    [
        "x]\n[gateway",
        'gh"]\n[credentials.other',
        "a b",
        "-leading",
        ".hidden",
        "x" * 65,
        "",
        "ünïcode",
        "tab\there",
    ],
)
def test_a_name_that_would_leave_its_header_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="is not a name"):
        add_http_service(EMPTY, _draft(name))
    with pytest.raises(ConfigError, match="is not a name"):
        add_http_service(EMPTY, _draft("gh", name=name))
    host = SshHostDraft(name, "203.0.113.7", "deploy", HOST_KEY, "box-key")
    with pytest.raises(ConfigError, match="is not a name"):
        add_ssh_host(EMPTY, host)


def test_a_name_with_a_dot_is_one_key_not_a_nested_table() -> None:
    text = add_http_service(EMPTY, _draft("deploy.v2", name="api.v2"))
    policy = parse_gateway_policy(text)[0]
    assert policy.credentials["deploy.v2"].kind == "oauth"
    assert policy.http.services["api.v2"].credential == "deploy.v2"
    plain = HttpServiceDraft("svc.v1", "https://api.example.com", "tok.v1", ("op.one=GET /x",))
    parsed = parse_gateway_policy(add_http_service(EMPTY, plain))[0]
    assert "op.one" in parsed.http.services["svc.v1"].operations
    assert parsed.credentials["tok.v1"].kind == "token"
