"""Values written to show a shape, not drawn: a token's stand-in in its own format
(``ghp_xxxx…``, ``sk-…0123456789``)."""

from __future__ import annotations

import itertools
import re

_STAND_IN_WORDS = (
    *(
        spelling
        for word in ("example", "xxxx", "placeholder", "dummy", "sample", "redacted")
        for spelling in (word, word.upper(), word.capitalize())
    ),
    *("your", "Your", "fake", "Fake"),
)
_STAND_IN_RUN = 6  # "123456", "abcdef", "987654": typed by hand, not drawn at random
_ONE_CHARACTER_RUN = re.compile(r"(.)\1{11}")  # "000000000000", "AAAAAAAAAAAA"


def is_token_stand_in(value: str, *, runs: bool = False) -> bool:
    """A token's prefix around a body no generator draws: an example word, x's, a run of one
    character (unless ``runs``: the format holds such runs) or an ascending or descending run of
    six letters or digits. Long values (JWTs of kilobytes) are judged by the words only where
    short: their base64 holds any given word by chance."""
    if len(value) <= 256 and any(word in value for word in _STAND_IN_WORDS):
        return True
    if not runs and _ONE_CHARACTER_RUN.search(value):
        return True
    return _has_sequence(value)


def _has_sequence(value: str, run: int = _STAND_IN_RUN) -> bool:
    up = down = 1
    for previous, current in itertools.pairwise(value):
        step = ord(current) - ord(previous)
        same_class = previous.isdigit() == current.isdigit() and previous.isalnum()
        up = up + 1 if step == 1 and same_class and current.isalnum() else 1
        down = down + 1 if step == -1 and same_class and current.isalnum() else 1
        if up >= run or down >= run:
            return True
    return False
