"""The policy reference lists every OAuth preset of the catalogue, each quirk in words; a quirk
added without words stops the page from being generated instead of going unexplained."""

from __future__ import annotations

import dataclasses

import pytest

from harness.gateway import REPO
from safeport.action_gateway.oauth import presets
from safeport.authoring.preset_reference import QUIRK_WORDS, UndescribedQuirk
from safeport.authoring.reference import policy_reference

PAGE = REPO / "docs" / "reference" / "policy.md"


def test_every_preset_has_its_row_on_the_committed_page() -> None:
    page = PAGE.read_text()
    for preset in presets.PRESETS.values():
        [row] = [line for line in page.splitlines() if line.startswith(f"| `{preset.name}` |")]
        assert preset.docs_url in row
        for scope in preset.default_scopes:
            assert f"`{scope}`" in row
        assert f'`"{preset.client_auth}"`' in row
        for quirk in preset.quirks:
            assert QUIRK_WORDS[quirk] in row


def test_every_quirk_of_the_catalogue_has_words() -> None:
    assert set(QUIRK_WORDS) == presets.QUIRKS


def test_a_quirk_without_words_fails_the_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    github = presets.PRESETS["github"]
    odd = dataclasses.replace(github, quirks=github.quirks | {"answers_in_xml"})
    monkeypatch.setattr(presets, "PRESETS", {**presets.PRESETS, "github": odd})
    monkeypatch.setattr("safeport.authoring.preset_reference.PRESETS", presets.PRESETS)
    with pytest.raises(UndescribedQuirk, match="github: quirk 'answers_in_xml'"):
        policy_reference()
