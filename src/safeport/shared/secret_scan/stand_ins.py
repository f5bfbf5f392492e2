"""Values written to show a shape, not drawn: a token's stand-in in its own format
(``ghp_xxxx…``, ``sk-…0123456789``), a value typing a run under a secret's name, and a value that
names a release or a setting."""

from __future__ import annotations

import itertools
import re

from safeport.shared.secret_scan.checks import looks_random

_STAND_IN_WORDS = (
    *(
        spelling
        for word in ("example", "xxxx", "placeholder", "dummy", "sample", "redacted")
        for spelling in (word, word.upper(), word.capitalize())
    ),
    *("your", "Your", "fake", "Fake"),
)
_STAND_IN_RUN = 6  # "123456", "abcdef", "987654": typed by hand, not drawn at random
# Longer in a value under a name alone, where a chosen secret ("Acme12345678!") may hold eight.
_TYPED_RUN = 10
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


# A release's version (``jjwt-jackson-0.11.2``, ``rc0.15.0_…-SNAPSHOT``); a date written with
# dots (``15.03.1987``) is not one, since people put dates in the secrets they choose.
_VERSION = re.compile(
    r"(?<![0-9.])(?![0-9]{1,2}\.[0-9]{1,2}\.(?:19|20)?[0-9]{2}(?![0-9.]))"
    r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,6}(?![0-9.])"
)
# A dotted setting's name (``jetbrains.mps.v8_elimination``): three or more words, a digit at
# most in each. Each part is read one way only (letters, then a digit and letters), so a value
# that fails to match fails in linear time.
_DOTTED_NAME = re.compile(r"[a-z][a-z_]*(?:[0-9][a-z_]*)?(?:\.[a-z][a-z_]*(?:[0-9][a-z_]*)?){2,}")


def release_or_setting(value: str, *, quoted: bool) -> bool:
    """A value that names a release or a setting: a dotted name of words with one digit at
    most, or a version beside nothing that looks drawn (``Kx9Lq2mZ…-v2.4.1`` is a key)."""
    if "." not in value:
        return False
    if _DOTTED_NAME.fullmatch(value):
        return sum(c.isdigit() for c in value) <= 1
    if not _VERSION.search(value):
        return False
    return not looks_random(_VERSION.sub("", value).strip("-_.:+"), quoted=quoted)


def typed_sequence(value: str) -> bool:
    """An ascending or descending run of ten letters or digits in either case
    (``1234567890``, ``0123456789abcdef``, ``aBcDeFgHiJ``): a value typed to show a shape, which
    a draw holds about never (a chosen secret's ``12345678`` is shorter)."""
    return _has_sequence(value.lower(), _TYPED_RUN, keyboard=True)


def _has_sequence(value: str, run: int = _STAND_IN_RUN, *, keyboard: bool = False) -> bool:
    """A run of ``run``; with ``keyboard``, digits run on from 9 to 0 as the keyboard's row."""
    up = down = 1
    for previous, current in itertools.pairwise(value):
        step = ord(current) - ord(previous)
        if keyboard and previous == "9" and current == "0":
            step = 1
        same_class = previous.isdigit() == current.isdigit() and previous.isalnum()
        up = up + 1 if step == 1 and same_class and current.isalnum() else 1
        down = down + 1 if step == -1 and same_class and current.isalnum() else 1
        if up >= run or down >= run:
            return True
    return False
