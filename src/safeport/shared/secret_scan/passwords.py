"""What a password name makes of a short quoted literal, and the spellings of that name.

A generated token is long and varied, and ``checks.looks_random`` asks that of every value a
secret-like name holds. A password a person chose is neither (``"x7!kq"``, ``"Summer24"``), but
under a name that can only mean a password (``password``, ``passwd``, ``pwd``, ``passphrase`` and
their misspellings) a quoted literal is what the program logs in with, whatever it looks like.
Only a quoted literal: an unquoted word after such a name is a variable in code. What stays
served is what no one logs in with: a placeholder or lookup (``checks.is_placeholder``), an
expression, a type name, one ordinary word with no digit or symbol (``"hidden"``, ``"string"``,
``"Secret"``), the name itself.

People misspell the word, and a misspelled name is as much a password's: ``passowrd``,
``pasword``, ``paasword``, ``passworsd``, ``passwrd``. A word is taken for one when it is at most
two edits (insertions, deletions, substitutions, swaps of neighbours) from ``password`` or
``passwd``, starts with ``pa`` or ``ps``, and holds a ``w`` or ends in ``rd``: that keeps the
ordinary words near them out (``passed``, ``passes``, ``parsed``, ``pasted``, ``passport``,
``passer``, none of which holds a ``w``).
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.checks import is_placeholder

# Names that mean a password and nothing else (the last word of the name).
_STRONG = frozenset({"password", "passwd", "pwd", "passphrase", "passwords"})
_TARGETS = ("password", "passwd")
_SHORTEST = 5
_LONGEST = 128
# A quoted literal that is code or one word, not a password: a call, a dotted or bracketed name,
# letters alone (possibly joined by separators), a format or template.
_EXPRESSION = re.compile(r".*[()\[\]{}].*|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+")
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[-_. ][A-Za-z]+)*")
_SPACE_OR_QUOTE = re.compile(r"[\s\"'`\\]")
# ``pwd`` is also the working directory: a path under it is no password.
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\|[A-Za-z][\w+.\-]*://)")


def password_name(words: list[str]) -> bool:
    """Whether a name (split by ``names.name_words``) ends in a word that means a password."""
    last = words[-1].rstrip("0123456789")
    return last in _STRONG or misspelled_password(last)


def chosen_password(value: str, name: str) -> bool:
    """Whether a quoted literal under a password name is one a person would log in with."""
    if not _SHORTEST <= len(value) <= _LONGEST or _SPACE_OR_QUOTE.search(value):
        return False
    if (
        is_placeholder(value)
        or _PATH.match(value)
        or _WORDS_ONLY.fullmatch(value)
        or _EXPRESSION.fullmatch(value)
    ):
        return False
    lowered = value.lower()
    return lowered not in name.lower() and not misspelled_password(lowered.strip("_-.:"))


def misspelled_password(word: str) -> bool:
    """A misspelling of ``password``/``passwd`` (see the module's note), not the word itself."""
    if not 4 <= len(word) <= 11 or not word.isalpha() or word in _TARGETS:
        return False
    if not word.startswith(("pa", "ps")) or not ("w" in word or word.endswith("rd")):
        return False
    return any(_within_two(word, target) for target in _TARGETS)


def _within_two(word: str, target: str) -> bool:
    """Optimal string alignment distance of ``word`` and ``target`` is at most 2."""
    if abs(len(word) - len(target)) > 2:
        return False
    previous2: list[int] = []
    previous = list(range(len(target) + 1))
    for i, char in enumerate(word, 1):
        current = [i] + [0] * len(target)
        for j, other in enumerate(target, 1):
            cost = char != other
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == target[j - 2] and word[i - 2] == other:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > 2:
            return False
        previous2, previous = previous, current
    return previous[-1] <= 2


# English words that hold "pass" and name no secret: in real code most "pass" hits are these
# ("tests passed", "passing", "bypass"), and each would otherwise be judged as a name.
_ORDINARY_PASS = frozenset(
    {
        "passed",
        "passes",
        "passing",
        "passage",
        "passages",
        "passenger",
        "passengers",
        "passive",
        "passively",
        "passthrough",
        "passthru",
        "passable",
        "passion",
        "passionate",
        "bypass",
        "bypassed",
        "bypasses",
        "bypassing",
        "compass",
        "encompass",
        "encompasses",
        "encompassing",
        "surpass",
        "surpassed",
        "surpasses",
        "overpass",
        "underpass",
        "trespass",
    }
)


# The hits ``ordinary_pass_word`` may find ordinary; it finds any other not.
ORDINARY_PREFIXES = frozenset(("pass", "passe", "_PAT"))


def ordinary_pass_word(text: str, start: int, end: int) -> bool:
    """Whether the hit is the "pass" (or "passe") of one of those words (in small letters,
    whole), or the ``_PAT`` of a longer name (``_PATH``, ``_PATTERN``)."""
    word = text[start:end]
    if word == "_PAT":
        return text[end : end + 1].isalnum()
    if word not in ("pass", "passe"):
        return False
    if not text[start - 1 : start].islower() and not text[end : end + 1].islower():
        return False  # the word alone ("pass" ending its line): none of those
    left = start
    while left > start - 8 and left > 0 and text[left - 1].islower():
        left -= 1
    right = end
    while right < end + 8 and right < len(text) and text[right].islower():
        right += 1
    if text[left - 1 : left].isalnum() or text[right : right + 1].isalnum():
        return False  # part of a longer name ("passedValue", "xpassed2")
    return text[left:right] in _ORDINARY_PASS
