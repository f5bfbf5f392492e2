"""Names that name no secret, known before any rule judges what follows them.

Most word hits in real code sit inside names like ``author``, ``tokenizer``, ``use_token``,
``KeyError`` or Python's ``pass``: every rule that takes a value by its name (an assignment, a
pair, prose, a value below, an escaped or byte-array value) would judge the name and find it
names nothing secret, each after its own look at what follows. Judging the name once, first,
costs one bounded match each side and a cached verdict, and leaves the rules the hits that may
hold a value.
"""

from __future__ import annotations

import re
from functools import lru_cache

from safeport.shared.secret_scan.names import name_words, secret_name, weak_secret_name

# The characters a rule takes as part of a name (``self.auth``, ``X-Auth-Token``, ``db_pass``),
# as far as any rule walks; a longer run is left to the rules, which see more of it.
_NAME_REACH = 64
# Anchored at the name's first character by the look-behind, so a search tries each position
# in one step and matches at one only.
_NAME_BEFORE = re.compile(rf"(?<![\w.\-])[\w.\-]{{1,{_NAME_REACH}}}\Z")
_NAME_AFTER = re.compile(rf"[\w.\-]{{0,{_NAME_REACH}}}")


def names_no_secret(text: str, start: int, end: int, line_start: int, line_end: int) -> bool:
    """Whether the word hit at ``text[start:end]`` lies in a name that names no secret, weak or
    not (``author``, ``tokens``, ``KeyError``, ``use_token``), so no rule judging a name finds a
    value for it. A name that runs past the reach, or follows a ``%`` (a URL-encoded query's
    name, ``%26auth%3D``), is left to the rules."""
    before_hit = text[start - 1 : start] if start > line_start else ""
    if before_hit and (before_hit.isalnum() or before_hit in "_.-"):
        before = _NAME_BEFORE.search(text, max(line_start, start - _NAME_REACH), start)
        if before is None:
            return False  # a name longer than the reach
        name_start = before.start()
    else:
        name_start = start
    after = _NAME_AFTER.match(text, end, line_end)
    name_end = end if after is None else after.end()
    if name_end - end >= _NAME_REACH or text[name_start - 1 : name_start] == "%":
        return False
    return _names_nothing(text[name_start:name_end].strip("._-"))


@lru_cache(maxsize=4096)
def _names_nothing(name: str) -> bool:
    words = name_words(name)
    if not words:
        return False
    # A constant run together (``AESKEY``, ``HMACSECRET``) is still judged by the byte-array
    # rule, which takes its ending (``byte_arrays._secret_like``).
    last = words[-1].rstrip("0123456789")
    if last.endswith(("key", "secret", "salt")) and len(last) <= 16:
        return False
    return not secret_name(name, words) and not weak_secret_name(words)


def bare_pass_statement(text: str, start: int, end: int, line_start: int, line_end: int) -> bool:
    """Whether the hit is Python's ``pass`` statement alone on its line: no value on it or
    below it."""
    return end - start == 4 and text[line_start:line_end].strip() == "pass"


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
