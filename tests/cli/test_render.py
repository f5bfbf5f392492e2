"""Text from outside is rendered inert."""

from __future__ import annotations

import pytest

from safeport.cli.render import inert


@pytest.mark.parametrize(
    "char",
    ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\u061c", "\u2028", "\u2029", "\ufeff"],
)
def test_control_bidi_and_separator_characters_are_escaped(char: str) -> None:
    rendered = inert(f"a{char}b")
    assert char not in rendered and rendered.startswith("a\\u") and rendered.endswith("b")


def test_ordinary_text_is_unchanged() -> None:
    assert inert("deploy-api: café ✓") == "deploy-api: café ✓"
