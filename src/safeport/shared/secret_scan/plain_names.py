"""Ordinary English words that hold a secret-like word and name no secret.

In real code most ``pass`` hits are words like "passed", "passing" or "bypass"; each is known
here in one look, before any rule judges it as a name.
"""

from __future__ import annotations

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


def ordinary_pass_word(text: str, start: int, end: int) -> bool:
    """Whether the hit is the "pass" (or "passe") of one of those words (in small letters,
    whole), or the ``_PAT`` of a longer name (``_PATH``, ``_PATTERN``)."""
    word = text[start:end]
    if word == "_PAT":
        return text[end : end + 1].isalnum()
    if word not in ("pass", "passe"):
        return False
    left = start
    while left > start - 8 and left > 0 and text[left - 1].islower():
        left -= 1
    right = end
    while right < end + 8 and right < len(text) and text[right].islower():
        right += 1
    if text[left - 1 : left].isalnum() or text[right : right + 1].isalnum():
        return False  # part of a longer name ("passedValue", "xpassed2")
    return text[left:right] in _ORDINARY_PASS
