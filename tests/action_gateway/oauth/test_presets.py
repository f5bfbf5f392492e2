"""Every preset of the catalogue is well-formed: https endpoints written exactly, known quirks,
valid default scopes, and a policy naming it parses and resolves."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from safeport.action_gateway.oauth import presets as catalogue
from safeport.action_gateway.oauth.endpoints import resolve
from safeport.action_gateway.oauth.presets import PRESETS, QUIRKS, Preset
from safeport.shared.schemas.config_oauth import (
    PRESET_NAMES,
    SCOPE_TOKEN,
    ClientAuth,
    OAuthGrantSpec,
    check_endpoint,
    check_issuer,
)

ENDPOINTS = (
    "authorization_endpoint",
    "token_endpoint",
    "device_authorization_endpoint",
    "revocation_endpoint",
)


def test_the_catalogue_and_the_schema_name_the_same_presets() -> None:
    assert sorted(PRESETS) == sorted(PRESET_NAMES)
    assert set(PRESET_NAMES) >= {"github", "google", "microsoft", "slack", "atlassian"}
    assert {"linear", "gitlab"} <= set(PRESETS)


def test_every_quirk_constant_is_in_the_known_set() -> None:
    constants = {
        value
        for name, value in vars(catalogue).items()
        if name.isupper() and isinstance(value, str) and name != "ATLASSIAN_AUDIENCE"
    }
    assert constants == QUIRKS


@pytest.mark.parametrize("preset", PRESETS.values(), ids=list(PRESETS))
def test_a_preset_is_well_formed(preset: Preset) -> None:
    assert PRESETS[preset.name] is preset and preset.title
    for field in ENDPOINTS:
        value = getattr(preset, field)
        if value is not None:
            check_endpoint(value, field)  # https, exactly as a browser writes it
            assert value.startswith("https://")
    assert preset.authorization_endpoint or preset.device_authorization_endpoint
    if preset.issuer is not None:
        check_issuer(preset.issuer)
    assert preset.quirks <= QUIRKS
    assert preset.client_auth in get_args(ClientAuth)
    assert preset.default_scopes
    assert len(set(preset.default_scopes)) == len(preset.default_scopes)
    assert all(re.fullmatch(SCOPE_TOKEN, scope) for scope in preset.default_scopes)
    assert preset.docs_url.startswith("https://")
    if catalogue.OFFLINE_ACCESS_SCOPE in preset.quirks:
        # The quirk says a refresh token needs the scope: the default asks for it.
        assert "offline_access" in preset.default_scopes


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_policy_naming_a_preset_resolves_to_https_endpoints(name: str) -> None:
    spec = OAuthGrantSpec.model_validate({"preset": name, "client_id": "c"})
    endpoints = resolve(spec, PRESETS[name], None)
    assert endpoints.token.startswith("https://")
    assert endpoints.scopes == PRESETS[name].default_scopes
    assert endpoints.client_auth == PRESETS[name].client_auth


def test_the_known_quirks_of_each_provider() -> None:
    github = PRESETS["github"]
    assert {
        catalogue.FORM_ENCODED_TOKEN_RESPONSE,
        catalogue.SCOPE_SEPARATOR_COMMA,
        catalogue.NO_REFRESH_TOKEN,
    } <= github.quirks
    assert github.device_authorization_endpoint == "https://github.com/login/device/code"
    assert catalogue.ACCESS_TYPE_OFFLINE in PRESETS["google"].quirks
    assert PRESETS["google"].issuer == "https://accounts.google.com"
    assert catalogue.OFFLINE_ACCESS_SCOPE in PRESETS["microsoft"].quirks
    assert "/common/" in PRESETS["microsoft"].token_endpoint
    slack = PRESETS["slack"]
    assert {
        catalogue.SCOPE_SEPARATOR_COMMA,
        catalogue.OK_FIELD,
        catalogue.TOKEN_TYPE_BOT_OR_USER,
    } <= slack.quirks
    assert slack.client_auth == "client_secret_basic"
    assert catalogue.AUDIENCE in PRESETS["atlassian"].quirks
    assert PRESETS["gitlab"].issuer == "https://gitlab.com"


def test_the_catalogue_cannot_be_changed_at_run_time() -> None:
    with pytest.raises(TypeError):
        PRESETS["evil"] = PRESETS["github"]  # type: ignore[index]
