"""The looks a secret-like word takes after its name: an assignment, a bearer header, a field
beside it, a flag or prose, a value below or escaped, a byte array (``scanner.py`` decides
which word hits reach them).

Each look's pattern starts with the rest of the word's name and can only match where one of a
few characters follows it (the ``*_STARTS`` sets of each look's module), so a look whose start
cannot be there is not tried.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import (
    SEPARATED_AFTER_BLANKS,
    SEPARATED_STARTS,
    STRONG_AFTER_BLANKS,
    STRONG_STARTS,
    assignment_at,
    bearer_at,
    may_assign,
    may_assign_strong,
)
from safeport.shared.secret_scan.byte_arrays import byte_array_at, may_hold_bytes
from safeport.shared.secret_scan.encoded import inside_base64_run
from safeport.shared.secret_scan.pairs import PAIR_AFTER_BLANKS, PAIR_STARTS, may_pair, pair_at
from safeport.shared.secret_scan.passwords import ordinary_pass_word
from safeport.shared.secret_scan.prefilter import Anchor
from safeport.shared.secret_scan.prose import (
    CONTEXT_STARTS,
    in_context,
    spaced_may_hold,
)
from safeport.shared.secret_scan.spans import SecretSpan
from safeport.shared.secret_scan.structured import (
    BELOW_AFTER_BLANKS,
    BELOW_OPENS,
    BELOW_STARTS,
    below_opening,
    escaped_value_at,
    may_be_escaped,
    pieces_below,
    value_below,
)
from safeport.shared.secret_scan.tables import table_column_at

# The rest of a word's name (every look after a word starts by reading it), and blanks.
name_run = re.compile(r"[\w.\-]{0,64}").match
blank_run = re.compile(r"[ \t]*").match


def beyond_blanks(text: str, at: int, line_end: int) -> str:
    """The character after the blanks at ``at``, or "" at the line's end."""
    past = past_blanks(text, at, line_end)
    return text[past] if past < line_end else ""


def past_blanks(text: str, at: int, line_end: int) -> int:
    """Where the blanks at ``at`` end: most runs are one space or none, told without a match."""
    if at >= line_end or (text[at] != " " and text[at] != "\t"):
        return at
    if at + 1 >= line_end or (text[at + 1] != " " and text[at + 1] != "\t"):
        return at + 1
    return blank_run(text, at, line_end).end()  # type: ignore[union-attr]


def name_end_at(text: str, end: int, line_end: int) -> int:
    """Where a word's name goes on to (its run of name characters, at most 64): most words
    are followed by none (a space, a bracket, a colon), told without a match."""
    after = text[end] if end < line_end else ""
    if not after or not (after.isalnum() or after == "_" or after == "." or after == "-"):
        return end
    return name_run(text, end, line_end).end()  # type: ignore[union-attr]


# What ``structured.may_be_escaped`` (80 characters from a word's end) and
# ``byte_arrays.may_hold_bytes`` (64) look for first; neither can find anything without one.
escape_or_bracket = re.compile(r"[\\{\[]").search
BYTES_REACH = 80
# The characters after a word's name where any of its looks can start: a weak word's
# (``key``, ``api``, ``seed``: an assignment of a strongly random value, a pair, a value below)
# and any other's (also prose, a flag, a call); after a weak word's name and blanks, what its
# looks need next.
WEAK_LOOKS = STRONG_STARTS | PAIR_STARTS | BELOW_STARTS
WORD_LOOKS = SEPARATED_STARTS | PAIR_STARTS | CONTEXT_STARTS | BELOW_STARTS
WEAK_AFTER_BLANKS = STRONG_AFTER_BLANKS | PAIR_AFTER_BLANKS | BELOW_AFTER_BLANKS
# What may follow a keyword inside a name that closes with a quote or its line: more of the
# name, the quote, the line's end. A bracket, space or comma (most hits in code) rules out a
# paired name without a pattern match.
NAME_GOES_ON = frozenset(("", "\n", "\r", "_", ".", "-", '"', "'", "\\"))


def table_word_hit(
    text: str,
    anchor: Anchor,
    start: int,
    end: int,
    line_start: int,
    line_end: int,
    word_done: int,
    spans: list[SecretSpan],
) -> tuple[SecretSpan | None, int]:
    """What the word hit at ``text[start:end]`` in a Markdown table's row names (the column it
    heads joins ``spans``), and where the next word hit needs judging again. A quiet name (a
    space and a plain word after it) may still head a column."""
    after = text[end : end + 1]
    quiet = (
        after in (" ", "\t")
        and not anchor.bearer
        and not spaced_may_hold(text, start, end, line_start, line_end)
    )
    if (anchor.ordinary_prefix and ordinary_pass_word(text, start, end)) or (
        (after.isalnum() or after == "=")
        and inside_base64_run(text, start, end, line_start, line_end)
    ):
        return None, word_done
    if start >= word_done:
        spans.extend(table_column_at(text, start, line_start, line_end))
    if start >= word_done and not quiet and not (anchor.weak and after.islower()):
        name_end = name_end_at(text, end, line_end)
        return word_value_at(
            text, anchor, start, end, name_end, line_start, line_end, word_done, spans
        )
    return None, word_done


def word_hit(
    text: str,
    anchor: Anchor,
    start: int,
    end: int,
    line_start: int,
    line_end: int,
    word_done: int,
    spans: list[SecretSpan],
) -> tuple[SecretSpan | None, int]:
    """What the word hit at ``text[start:end]`` outside a table's row names, and where the next
    word hit needs judging again; most word hits end at one of the cheap looks here, before any
    pattern runs."""
    after = text[end : end + 1]
    # A name a space and a plain word follow holds a value in a few shapes only,
    # which two cheap looks rule out for most words in prose and code
    # (``spaced_may_hold``): "the token expires", the commonest word hit.
    if (
        (after == " " or after == "\t")
        and not anchor.bearer
        and not spaced_may_hold(text, start, end, line_start, line_end)
    ):
        return None, word_done
    # "pass" is one of the ordinary words only beside a small letter, "_PAT" only
    # before a letter or digit (``ordinary_pass_word``): Python's ``pass`` is neither.
    if (
        anchor.ordinary_prefix
        and (after.islower() or after.isalnum() or text[start - 1 : start].islower())
        and ordinary_pass_word(text, start, end)
    ) or (
        (after.isalnum() or after == "=")
        and inside_base64_run(text, start, end, line_start, line_end)
    ):
        return None, word_done
    if end == line_end:
        # A word ending its line (Python's ``pass``, most word hits in code) has
        # nothing after it for any look but one: it may close a name whose value
        # is below (a YAML ``name:``).
        return pair_at(text, start, end, line_start, line_end)
    # Each look's pattern starts with the rest of the word's name, and can only
    # match where one of a few characters follows that name (``*_STARTS``): a
    # word after which none of its looks can start (``key)``, ``key, default``,
    # ``if key is None``) is done here.
    name_end = name_end_at(text, end, line_end)
    follows = text[name_end] if name_end < line_end else ""
    if not anchor.weak:
        may_look = follows in WORD_LOOKS or anchor.pass_word or anchor.bearer
    elif follows == " " or follows == "\t":
        may_look = beyond_blanks(text, name_end, line_end) in WEAK_AFTER_BLANKS
    else:
        may_look = follows in WEAK_LOOKS
    if may_look:
        return word_value_at(
            text, anchor, start, end, name_end, line_start, line_end, word_done, spans
        )
    # None of the looks that start after the name can start here: only an escaped value or a
    # byte array further on may be the word's (``_below_or_escaped``'s last two looks).
    if not escape_or_bracket(text, name_end, min(line_end, end + BYTES_REACH)):
        return None, word_done
    return _escaped_or_bytes(text, start, end, line_start, line_end, True), word_done


def word_value_at(
    text: str,
    anchor: Anchor,
    start: int,
    end: int,
    name_end: int,
    line_start: int,
    line_end: int,
    word_done: int,
    spans: list[SecretSpan],
) -> tuple[SecretSpan | None, int]:
    """The value the word at ``text[start:end]``, whose name runs on to ``name_end``, names in
    each shape a word may name one (an assignment, a bearer header, a field beside it, a flag
    or prose, a value below or escaped, a byte array), and where the next word hit needs
    judging again. A value found beside the one returned (one continued below the line) joins
    ``spans``."""
    if end == line_end:
        # A word ending its line has nothing after it for any look but a pair's (``_find``).
        return pair_at(text, start, end, line_start, line_end)
    # Only the looks that can start after the name's end (``*_STARTS``) are tried.
    after = text[end]
    if name_end == line_end and not anchor.pass_word:
        # A name running to its line's end ("tokenize", "= seed") has only name characters
        # after the word, where nothing but the pair's look can start; "pass" (below) takes a
        # value after a space, and its look for one moves ``word_done``.
        if (after in NAME_GOES_ON or after.isalnum()) and may_pair(text, end, line_end):
            return pair_at(text, start, end, line_start, line_end)
        return None, word_done
    follows = text[name_end] if name_end < line_end else ""
    # Blanks after the name ("key = …", "if key is None") may come before a separator or the
    # line's end: what follows them decides (``*_AFTER_BLANKS``).
    blank = follows == " " or follows == "\t"
    beyond = ""
    blanks_end = name_end
    if blank:
        blanks_end = past_blanks(text, name_end, line_end)
        beyond = text[blanks_end] if blanks_end < line_end else ""
    weak = anchor.weak
    found: SecretSpan | None = None
    separated = _may_assign(text, anchor, start, end, line_end, follows, beyond, blank)
    if separated:
        found, reach = assignment_at(text, start, end, line_start, line_end, name_end)
        # A weak word's miss leaves its name to the words around it ("apiKey").
        word_done = reach if found is not None or not weak else word_done
        separated = not anchor.pass_word  # "pass" may need no sign
    if found is None and anchor.bearer:
        found = bearer_at(text, start, line_end)
    if found is None:
        found, word_done = _beside(
            text, anchor, start, end, name_end, line_start, line_end, word_done, separated
        )
    below, found = _below_or_escaped(
        text, start, end, name_end, line_start, line_end, found, blank, beyond, blanks_end
    )
    if below is not None:
        spans.append(below)
        if below.start > line_end and "\n" not in text[below.start : below.end]:
            spans.extend(pieces_below(text, below))  # a value alone below, going on
    return found, word_done


def _below_or_escaped(
    text: str,
    start: int,
    end: int,
    name_end: int,
    line_start: int,
    line_end: int,
    found: SecretSpan | None,
    blank: bool,
    beyond: str,
    blanks_end: int,
) -> tuple[SecretSpan | None, SecretSpan | None]:
    """A value below the word (begun on its line or not), then, where ``found`` is still None,
    an escaped value or a byte array after it: (the value below, what is found)."""
    follows = text[name_end] if name_end < line_end else ""
    # A value below needs its separator then, after blanks, an opening or the line's end
    # (``BELOW_OPENS``): "key: int" and "key = value" have none.
    if blank:
        separator = blanks_end if beyond in BELOW_AFTER_BLANKS else -1
    else:
        separator = name_end if follows in BELOW_AFTER_BLANKS else -1
    opening = (
        below_opening(text, end, line_end)
        if (separator >= 0 or (not blank and follows in BELOW_STARTS))
        and (separator < 0 or beyond_blanks(text, separator + 1, line_end) in BELOW_OPENS)
        else None
    )
    below = None
    if opening is not None:
        # Or begun here, continued below; judged from the match that found its opening.
        below = value_below(text, start, end, line_start, line_end, opening)
    # An escaped value and a byte array both open with a backslash, brace or bracket within
    # BYTES_REACH characters of the word: most names have none after them, and skip both looks.
    if found is None and escape_or_bracket(text, name_end, min(line_end, end + BYTES_REACH)):
        found = _escaped_or_bytes(text, start, end, line_start, line_end, opening is None)
    return below, found


def _escaped_or_bytes(
    text: str, start: int, end: int, line_start: int, line_end: int, escaped: bool
) -> SecretSpan | None:
    """An escaped value (where ``escaped``: no value below opened) or a byte array after the
    word at ``text[start:end]``."""
    found = None
    if escaped and may_be_escaped(text, end, line_end):
        found = escaped_value_at(text, start, end, line_start, line_end)
    if found is None and may_hold_bytes(text, end, line_end):
        found = byte_array_at(text, start, end, line_start, line_end)
    return found


def _may_assign(
    text: str,
    anchor: Anchor,
    start: int,
    end: int,
    line_end: int,
    follows: str,
    beyond: str,
    blank: bool,
) -> bool:
    """Whether an assignment's look may find a value after the word: a weak word's needs a
    strongly random value; "pass" may take a value after a space alone (``may_assign`` is
    true for it)."""
    if anchor.weak:
        return (beyond in STRONG_AFTER_BLANKS if blank else follows in STRONG_STARTS) and (
            may_assign_strong(text, end, line_end)
        )
    return anchor.pass_word or (
        (beyond in SEPARATED_AFTER_BLANKS if blank else follows in SEPARATED_STARTS)
        and may_assign(text, start, end, line_end)
    )


def _beside(
    text: str,
    anchor: Anchor,
    start: int,
    end: int,
    name_end: int,
    line_start: int,
    line_end: int,
    word_done: int,
    separated: bool,
) -> tuple[SecretSpan | None, int]:
    """A value the word names other than by assignment: in the field beside a name that is
    itself a field's value, or in context (a flag, prose, markup, a lookup's default)."""
    after, follows = text[end], text[name_end] if name_end < line_end else ""
    blank = follows == " " or follows == "\t"
    beyond = beyond_blanks(text, name_end, line_end) if blank else ""
    # A name that is itself a field's value (``key="Password" value="…"``, a YAML ``name:``
    # ending its line) names the secret of the field beside it; a name a separator follows is
    # not one.
    if (
        not separated
        and (beyond in PAIR_AFTER_BLANKS if blank else follows in PAIR_STARTS)
        and (after in NAME_GOES_ON or after.isalnum())
        and may_pair(text, end, line_end)
    ):
        found, word_done = pair_at(text, start, end, line_start, line_end)
        if found is not None:
            return found, word_done
    if anchor.weak or follows not in CONTEXT_STARTS:  # a weak word: assignments only
        return None, word_done
    # A blank right after the word: the name ends there, and the hit came here only if
    # ``spaced_may_hold`` (the same look, at the same place) found it may hold a value.
    spaced_may = name_end == end and blank and not anchor.bearer
    return in_context(
        text, start, end, line_start, line_end, name_end, spaced_may=spaced_may
    ), word_done
