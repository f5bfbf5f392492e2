"""Values no test has seen, and the two assertions the detector's shape tests make of them.

A value is drawn as a generator makes one (random characters ending in a digit), so a test
proves a shape is found, not that one written value is; a draw that happens to spell a
placeholder's word ("test") is drawn again, since the detector rightly serves those."""

from __future__ import annotations

import secrets

from safeport.shared.secret_scan import find_secrets
from safeport.shared.secret_scan.checks import is_placeholder


def fresh() -> str:
    """A value no test has seen: 21 random characters, the last a digit."""
    while True:
        value = secrets.token_urlsafe(15).replace("-", "k").replace("_", "W") + str(
            secrets.randbelow(10)
        )
        if not is_placeholder(value):
            return value


def assert_only_secret(template: str) -> None:
    """``template`` with a fresh ``{value}`` holds one secret: exactly that value."""
    value = fresh()
    text = template.format(value=value)
    spans = [(span.start, span.end) for span in find_secrets(text)]
    at = text.index(value)
    assert spans == [(at, at + len(value))], text


def assert_clean(text: str) -> None:
    """``text`` holds nothing the detector withholds."""
    assert find_secrets(text) == [], text
