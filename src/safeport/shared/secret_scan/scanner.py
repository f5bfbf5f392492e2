"""Find every secret in a text: one prefilter pass, then only the checks its hits woke.

Text with no anchor costs that one pass (``prefilter.py``). Each hit wakes the rules of its
anchor at the hit itself (or along its line for tokens whose anchor sits inside them; a few lines
around it for AWS secret keys; up to the END marker for key blocks), so real code full of the word
``token`` pays per hit, not per rule per byte.

Characters a reader drops without noticing (zero-width spaces and joiners, soft hyphens, a BOM
or combining mark mid-token, the NULs of UTF-16 text read as UTF-8) and JSON's optional ``\\/``
would split a token for every rule while hiding nothing from whoever reads it. The lines around
each are judged a second time without them, each span found mapped back over what was dropped.
The prefilter finds them in its one pass, so a text without any pays nothing more, and one with
some pays again only for the lines around them.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
import threading
from collections import OrderedDict, defaultdict

from safeport.shared.secret_scan.assignments import (
    SEPARATED_AFTER_BLANKS,
    SEPARATED_STARTS,
    STRONG_AFTER_BLANKS,
    STRONG_STARTS,
    assignment_at,
    bearer_at,
    may_assign,
    may_assign_strong,
    url_credential_at,
)
from safeport.shared.secret_scan.byte_arrays import byte_array_at, may_hold_bytes
from safeport.shared.secret_scan.commands import command_at
from safeport.shared.secret_scan.encoded import inside_base64_run
from safeport.shared.secret_scan.pairs import (
    PAIR_AFTER_BLANKS,
    PAIR_STARTS,
    may_pair,
    pair_at,
    positional_at,
)
from safeport.shared.secret_scan.passwords import ordinary_pass_word
from safeport.shared.secret_scan.prefilter import HIDDEN, HIDDEN_ASCII, Anchor, hits
from safeport.shared.secret_scan.private_keys import KeyBlocks
from safeport.shared.secret_scan.prose import (
    CONTEXT_STARTS,
    in_context,
    spaced_may_hold,
    table_column_at,
)
from safeport.shared.secret_scan.provider_rules import TokenRule
from safeport.shared.secret_scan.shapes import Shapes
from safeport.shared.secret_scan.spans import (
    SecretSpan,
    every_copy,
    merge_spans,
    reach_value_ends,
)
from safeport.shared.secret_scan.structured import (
    BELOW_AFTER_BLANKS,
    BELOW_OPENS,
    BELOW_STARTS,
    below_opening,
    escaped_value_at,
    may_be_escaped,
    sealed_ciphertext,
    value_below,
)

_HIDDEN = re.compile("|".join(map(re.escape, (*HIDDEN_ASCII, *HIDDEN))))
# How many lines around a hidden character are judged again: a token is on one line; an AWS
# secret key's id may be this many lines away.
_HIDDEN_CONTEXT_LINES = 3

# The rest of a word's name (every look after a word starts by reading it), and blanks.
_name_run = re.compile(r"[\w.\-]{0,64}").match
_blank_run = re.compile(r"[ \t]*").match


def _beyond_blanks(text: str, at: int, line_end: int) -> str:
    """The character after the blanks at ``at``, or "" at the line's end."""
    past = _blank_run(text, at, line_end).end()  # type: ignore[union-attr]
    return text[past] if past < line_end else ""


# What ``structured.may_be_escaped`` (80 characters from a word's end) and
# ``byte_arrays.may_hold_bytes`` (64) look for first; neither can find anything without one.
_escape_or_bracket = re.compile(r"[\\{\[]").search
_BYTES_REACH = 80
# The characters after a word's name where any of its looks can start: a weak word's
# (``key``, ``api``, ``seed``: an assignment of a strongly random value, a pair, a value below)
# and any other's (also prose, a flag, a call); after a weak word's name and blanks, what its
# looks need next.
_WEAK_LOOKS = STRONG_STARTS | PAIR_STARTS | BELOW_STARTS
_WORD_LOOKS = SEPARATED_STARTS | PAIR_STARTS | CONTEXT_STARTS | BELOW_STARTS
_WEAK_AFTER_BLANKS = STRONG_AFTER_BLANKS | PAIR_AFTER_BLANKS | BELOW_AFTER_BLANKS
# What may follow a keyword inside a name that closes with a quote or its line: more of the
# name, the quote, the line's end. A bracket, space or comma (most hits in code) rules out a
# paired name without a pattern match.
_NAME_GOES_ON = frozenset(("", "\n", "\r", "_", ".", "-", '"', "'", "\\"))


# Large texts are remembered by a digest of their bytes: an agent reads the same file again and
# again, and the same bytes hold the same secrets, so a second read costs one hash (about a tenth
# of a scan) instead of a scan. Only spans are kept, never text. Smaller texts cost less to scan
# than to hash and look up. The digest is SHA-256: no one can write a file whose bytes collide
# with a clean file's to borrow its empty answer; and where the processor has SHA extensions
# (x86 since 2017-2019, ARMv8) OpenSSL hashes it about twice as fast as BLAKE2b.
REMEMBER_FROM_CHARS = 16 * 1024
REMEMBERED_TEXTS = 256
_recent: OrderedDict[bytes, tuple[SecretSpan, ...]] = OrderedDict()
_recent_lock = threading.Lock()


def find_secrets(text: str) -> list[SecretSpan]:
    """Every secret in ``text``, as non-overlapping spans in text order."""
    if len(text) < REMEMBER_FROM_CHARS:
        return scan_text(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    with _recent_lock:
        known = _recent.get(digest)
        if known is not None:
            _recent.move_to_end(digest)
            return list(known)
    spans = scan_text(text)
    with _recent_lock:
        _recent[digest] = tuple(spans)
        while len(_recent) > REMEMBERED_TEXTS:
            _recent.popitem(last=False)
    return spans


def scan_text(text: str) -> list[SecretSpan]:
    """``find_secrets`` without remembering: every secret in ``text``, scanned now."""
    spans, hidden = _find(text)
    if hidden:
        spans = merge_spans([*spans, *_find_through_hidden(text, hidden)])
    if not spans:
        return spans
    return every_copy(text, reach_value_ends(text, spans))


def _find_through_hidden(text: str, hidden: list[int]) -> list[SecretSpan]:
    """The secrets of the lines around each hidden character at ``hidden``, judged with every
    hidden character dropped, as spans of ``text``. A key block may be long: a text holding
    one is judged again whole."""
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        regions = [(0, len(text))]
    else:
        regions = []
        for at in hidden:
            if regions and at < regions[-1][1]:
                continue
            line_start = text.rfind("\n", 0, at) + 1
            newline = text.find("\n", at)
            line_end = len(text) if newline < 0 else newline
            start, end = _around(text, line_start, line_end, _HIDDEN_CONTEXT_LINES)
            if regions and start <= regions[-1][1]:
                start = regions[-1][0]
                regions.pop()
            regions.append((start, end))
    found = []
    for start, end in regions:
        piece = text[start:end]
        # The k-th dropped character sat before position dropped[k] - k of the shorter text.
        shifted = [m.start() - k for k, m in enumerate(_HIDDEN.finditer(piece))]

        def original(at: int, shifted: list[int] = shifted, start: int = start) -> int:
            return start + at + bisect.bisect_right(shifted, at)

        spans, _ = _find(_HIDDEN.sub("", piece))
        found += [SecretSpan(original(s.start), original(s.end - 1) + 1, s.kind) for s in spans]
    return found


def _find(text: str) -> tuple[list[SecretSpan], list[int]]:
    """The secrets of ``text`` as written, and where it holds a hidden character."""
    spans: list[SecretSpan] = []
    hidden: list[int] = []
    line_start = line_end = 0
    # Where the search back for a line's start stops: the end of the line before. A line's
    # start is found when a hit on it first needs it (-1 until then): a URL's or a command's
    # look reads to the line's end alone.
    line_before = 0
    # A Markdown table's row: its words are judged as its header (below). Found for a line
    # when a word on it first needs to know (None until then).
    table_row: bool | None = False
    word_done = -1  # a name holding several words ("secret_token") is judged once
    tokens, readers = _TokenRules(text), _Readers(text)
    find, rfind, text_end = text.find, text.rfind, len(text)  # bound once: the loop is hot
    for start, end, anchor in hits(text):
        if anchor.hidden:
            hidden.append(start)
            continue
        if start >= line_end:  # a new line: find its bounds once, however many hits it holds
            line_before, line_start = line_end, -1
            newline = find("\n", start)
            line_end = text_end if newline < 0 else newline
            table_row = None
        if anchor.rules:
            if line_start < 0:
                line_start = rfind("\n", line_before, start) + 1
            spans += tokens.at(anchor.rules, start, line_start, line_end)
        found: SecretSpan | None = None
        if anchor.word:  # a word's anchor wakes nothing else (``prefilter._table``)
            if table_row is None:  # the line's first word
                if line_start < 0:
                    line_start = rfind("\n", line_before, start) + 1
                table_row = "|" in text[line_start : line_start + 4]  # a slice: no call
            if table_row:
                found, word_done = _table_word_hit(
                    text, anchor, start, end, line_start, line_end, word_done, spans
                )
            else:
                # Most word hits end here, so their looks are written out in the loop rather
                # than called. A word inside a name already judged, or a weak word inside a
                # longer one (``keyword``, ``apis``, ``rapid``), names nothing.
                if start < word_done:
                    continue
                after = text[end : end + 1]
                if anchor.weak and after.islower():
                    continue
                # A name a space and a plain word follow holds a value in a few shapes only,
                # which two cheap looks rule out for most words in prose and code
                # (``spaced_may_hold``): "the token expires", the commonest word hit.
                if (
                    (after == " " or after == "\t")
                    and not anchor.bearer
                    and not spaced_may_hold(text, start, end, line_start, line_end)
                ):
                    continue
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
                    continue
                if end == line_end:
                    # A word ending its line (Python's ``pass``, most word hits in code) has
                    # nothing after it for any look but one: it may close a name whose value
                    # is below (a YAML ``name:``).
                    found, word_done = pair_at(text, start, end, line_start, line_end)
                    if found is not None:
                        spans.append(found)
                    continue
                # Each look's pattern starts with the rest of the word's name, and can only
                # match where one of a few characters follows that name (``*_STARTS``): a
                # word after which none of its looks can start (``key)``, ``key, default``,
                # ``if key is None``) is done here.
                name_end = _name_run(text, end, line_end).end()  # type: ignore[union-attr]
                follows = text[name_end] if name_end < line_end else ""
                if anchor.weak:
                    if follows == " " or follows == "\t":
                        blanks_end = _blank_run(text, name_end, line_end).end()  # type: ignore[union-attr]
                        beyond = text[blanks_end] if blanks_end < line_end else ""
                        may_look = beyond in _WEAK_AFTER_BLANKS
                    else:
                        may_look = follows in _WEAK_LOOKS
                else:
                    may_look = follows in _WORD_LOOKS or anchor.pass_word or anchor.bearer
                if not may_look and not _escape_or_bracket(
                    text, name_end, min(line_end, end + _BYTES_REACH)
                ):
                    continue
                found, word_done = _word_value_at(
                    text, anchor, start, end, name_end, line_start, line_end, word_done, spans
                )
        elif anchor.url:
            found = url_credential_at(text, start, line_end)
        elif anchor.command:
            found = command_at(text, start, end, line_end)
        elif anchor.call:
            found = positional_at(text, end, line_end)
        elif anchor.key_block or anchor.shape:
            if line_start < 0:
                line_start = rfind("\n", line_before, start) + 1
            if anchor.key_block:
                found = readers.key_blocks.at(start, line_start)
            else:
                spans.extend(readers.shapes.at(anchor.shape, start, end, line_start))
        if found is not None:
            spans.append(found)
    spans += tokens.searched()
    spans = [span for span in spans if not sealed_ciphertext(text, span.start)]
    return merge_spans(spans), hidden


class _TokenRules:
    """The provider rules the hits of one text wake. A rule whose anchor sits inside its token
    (``lead``) is searched once every hit is read, over the lines around its hits: each line
    joins its regions once, however many hits it holds."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: dict[TokenRule, int] = {}
        self.regions: dict[TokenRule, list[tuple[int, int]]] = defaultdict(list)

    def at(
        self, rules: tuple[TokenRule, ...], start: int, line_start: int, line_end: int
    ) -> list[SecretSpan]:
        """The tokens the rules of an anchor match at ``start``; lead rules note the line."""
        text = self.text
        found = []
        for rule in rules:
            if rule.lead:
                if self.lines.get(rule) != line_start:  # each line once, however many hits
                    self.lines[rule] = line_start
                    region = _around(text, line_start, line_end, rule.context_lines)
                    self.regions[rule].append(region)
                continue
            match = rule.pattern.match(text, start)
            if match is not None:
                group = "secret" if "secret" in rule.pattern.groupindex else 0
                if rule.check is None or rule.check(match.group(group)):
                    found.append(SecretSpan(match.start(group), match.end(group), rule.kind))
        return found

    def searched(self) -> list[SecretSpan]:
        """The tokens of the lead rules, over the regions their hits noted."""
        found = []
        for rule, regions in self.regions.items():
            found += _search_regions(self.text, rule, regions)
        return found


class _Readers:
    """The readers of a whole text, built the first time a hit needs one (most texts hold no
    key block and no shape, and never pay for either)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def key_blocks(self) -> KeyBlocks:
        return KeyBlocks(self.text)

    @functools.cached_property
    def shapes(self) -> Shapes:
        return Shapes(self.text)


def _table_word_hit(
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
        name_end = _name_run(text, end, line_end).end()  # type: ignore[union-attr]
        return _word_value_at(
            text, anchor, start, end, name_end, line_start, line_end, word_done, spans
        )
    return None, word_done


def _word_value_at(
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
        if (after in _NAME_GOES_ON or after.isalnum()) and may_pair(text, end, line_end):
            return pair_at(text, start, end, line_start, line_end)
        return None, word_done
    follows = text[name_end] if name_end < line_end else ""
    # Blanks after the name ("key = …", "if key is None") may come before a separator or the
    # line's end: what follows them decides (``*_AFTER_BLANKS``).
    blank = follows == " " or follows == "\t"
    beyond = ""
    if blank:
        blanks_end = _blank_run(text, name_end, line_end).end()  # type: ignore[union-attr]
        beyond = text[blanks_end] if blanks_end < line_end else ""
    weak = anchor.weak
    found: SecretSpan | None = None
    separated = False
    if (
        (
            (beyond in STRONG_AFTER_BLANKS if blank else follows in STRONG_STARTS)
            and may_assign_strong(text, end, line_end)
        )
        if weak
        # "pass" may take a value after a space alone: ``may_assign`` is true for it.
        else (
            anchor.pass_word
            or (
                (beyond in SEPARATED_AFTER_BLANKS if blank else follows in SEPARATED_STARTS)
                and may_assign(text, start, end, line_end)
            )
        )
    ):
        separated = not anchor.pass_word  # "pass" may need no sign
        found, reach = assignment_at(text, start, end, line_start, line_end, name_end)
        # A weak word's miss leaves its name to the words around it ("apiKey").
        word_done = reach if found is not None or not weak else word_done
    if found is None and anchor.bearer:
        found = bearer_at(text, start, line_end)
    # A name that is itself a field's value (``key="Password" value="…"``, a YAML ``name:``
    # ending its line) names the secret of the field beside it; a name a separator follows is
    # not one.
    if (
        found is None
        and not separated
        and (beyond in PAIR_AFTER_BLANKS if blank else follows in PAIR_STARTS)
        and (after in _NAME_GOES_ON or after.isalnum())
        and may_pair(text, end, line_end)
    ):
        found, word_done = pair_at(text, start, end, line_start, line_end)
    if found is None and not weak and follows in CONTEXT_STARTS:  # a weak word: assignments only
        # A blank right after the word: the name ends there, and the hit came here only if
        # ``spaced_may_hold`` (the same look, at the same place) found it may hold a value.
        found = in_context(
            text,
            start,
            end,
            line_start,
            line_end,
            name_end,
            spaced_may=name_end == end and blank and not anchor.bearer,
        )
    # A value below needs its separator then, after blanks, an opening or the line's end
    # (``BELOW_OPENS``): "key: int" and "key = value" have none.
    if blank:
        separator = blanks_end if beyond in BELOW_AFTER_BLANKS else -1
    else:
        separator = name_end if follows in BELOW_AFTER_BLANKS else -1
    opening = (
        below_opening(text, end, line_end)
        if (separator >= 0 or (not blank and follows in BELOW_STARTS))
        and (separator < 0 or _beyond_blanks(text, separator + 1, line_end) in BELOW_OPENS)
        else None
    )
    opens_below = opening is not None
    if opening is not None:
        # Or begun here, continued below; judged from the match that found its opening.
        below = value_below(text, start, end, line_start, line_end, opening)
        if below is not None:
            spans.append(below)
    # An escaped value and a byte array both open with a backslash, brace or bracket within
    # _BYTES_REACH characters of the word: most names have none after them, and skip both looks.
    if found is None and _escape_or_bracket(text, name_end, min(line_end, end + _BYTES_REACH)):
        if not opens_below and may_be_escaped(text, end, line_end):
            found = escaped_value_at(text, start, end, line_start, line_end)
        if found is None and may_hold_bytes(text, end, line_end):
            found = byte_array_at(text, start, end, line_start, line_end)
    return found, word_done


def _around(text: str, line_start: int, line_end: int, lines: int) -> tuple[int, int]:
    start, end = line_start, line_end
    for _ in range(lines):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1
        newline = text.find("\n", end + 1)
        end = len(text) if newline < 0 else newline
    return start, end


def _search_regions(text: str, rule: TokenRule, regions: list[tuple[int, int]]) -> list[SecretSpan]:
    found = []
    reached = -1
    for start, end in regions:  # in text order; a line with many hits is searched once
        if end <= reached:
            continue
        for match in rule.pattern.finditer(text, max(start, reached), end):
            if rule.check is None or rule.check(match.group()):
                found.append(SecretSpan(match.start(), match.end(), rule.kind))
        reached = end
    return found
