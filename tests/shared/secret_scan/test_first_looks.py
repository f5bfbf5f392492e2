"""The scanner skips a word's look when the character after the word's name cannot start it
(``*_STARTS``), and reads a word's flags instead of its text (``prefilter.Anchor``). Either
shortcut, wrong, would hide a secret without failing any test of a shape: these tests hold each
set to its pattern, over texts drawn to reach every branch of each pattern."""

from __future__ import annotations

import random
import re

import pytest

from safeport.shared.secret_scan import prose
from safeport.shared.secret_scan.assignments import (
    SEPARATED_AFTER_BLANKS,
    SEPARATED_STARTS,
    STRONG_AFTER_BLANKS,
    STRONG_STARTS,
    may_assign,
    may_assign_strong,
)
from safeport.shared.secret_scan.byte_arrays import may_hold_bytes
from safeport.shared.secret_scan.names import name_begins, name_words
from safeport.shared.secret_scan.pairs import PAIR_AFTER_BLANKS, PAIR_STARTS, may_pair
from safeport.shared.secret_scan.passwords import ORDINARY_PREFIXES, ordinary_pass_word
from safeport.shared.secret_scan.prefilter import ANCHORS, LITERALS
from safeport.shared.secret_scan.prose import CONTEXT_STARTS, in_context
from safeport.shared.secret_scan.scanner import scan_text
from safeport.shared.secret_scan.structured import (
    BELOW_AFTER_BLANKS,
    BELOW_OPENS,
    BELOW_STARTS,
    may_be_escaped,
    may_open_below,
)

_NAME = re.compile(r"[\w.\-]{0,64}")
_BLANKS = re.compile(r"[ \t]*")
_NAME_PIECES = ("a", "Z", "_", ".", "-", "7", "é", "ß", "x" * 30, "٣")
_PIECES = (
    *("=", ":", "=>", ":=", "?=", "+=", "!=", "|=", "||=", "<-", ">", "<", "::=", "==", "\uff1a"),
    *(" = ", " : ", "\t=> ", "  := ", " \uff1a", " <- ", " != ", " || ", " ? "),
    *(" ", "\t", "  ", "\r", '"', "'", '\\"', "\\'", "`", "]", "[", "*", "**", "(", ")", ","),
    *("%", "%26token%3D", "|", "{", "}", "\\x41", "\\u0041", "\\", "&quot;", "b", "r", "u"),
    *("value", "Value", '"""', "'''", "|-", ">+", "0x35, ", "bytes([", "new byte[]{"),
    *("#", ";", "@", "!", "+", "?", "~", "$", "^", "/", "int", "str | None", "é"),
    *("aB3dE5gH7jK9mN1pQ", "s3cr3tV4lu3xyzAB", "hunter2", "x" * 20, "\n", "\n value: x"),
)


def _texts(count: int) -> list[str]:
    """A word, the rest of its name (sometimes past 64 characters), then what may follow."""
    chooser = random.Random(1729)
    texts = []
    for _ in range(count):
        name = "".join(chooser.choices(_NAME_PIECES, k=chooser.choice((0, 0, 1, 2, 3, 4))))
        rest = "".join(chooser.choices(_PIECES, k=chooser.randrange(0, 7)))
        texts.append("token" + name + rest)
    return texts


def _follows(text: str, end: int, line_end: int) -> str:
    name_end = _NAME.match(text, end, line_end).end()  # type: ignore[union-attr]
    return text[name_end] if name_end < line_end else ""


def _beyond_blanks(text: str, end: int, line_end: int) -> str:
    name_end = _NAME.match(text, end, line_end).end()  # type: ignore[union-attr]
    blanks_end = _BLANKS.match(text, name_end, line_end).end()  # type: ignore[union-attr]
    return text[blanks_end] if blanks_end < line_end else ""


@pytest.mark.parametrize(
    ("look", "starts", "after_blanks"),
    [
        (
            lambda text, end, line_end: may_assign(text, 0, end, line_end),
            SEPARATED_STARTS,
            SEPARATED_AFTER_BLANKS,
        ),
        (may_assign_strong, STRONG_STARTS, STRONG_AFTER_BLANKS),
        (may_pair, PAIR_STARTS, PAIR_AFTER_BLANKS),
        (may_open_below, BELOW_STARTS, BELOW_AFTER_BLANKS),
    ],
    ids=["assign", "assign-strong", "pair", "open-below"],
)
def test_a_look_matches_only_after_a_character_of_its_starts(look, starts, after_blanks) -> None:  # type: ignore[no-untyped-def]
    matched = blanks = 0
    for text in _texts(40_000):
        newline = text.find("\n")
        line_end = len(text) if newline < 0 else newline
        if look(text, 5, line_end):
            matched += 1
            follows = _follows(text, 5, line_end)
            assert follows in starts, text
            if follows in (" ", "\t"):
                blanks += 1
                assert _beyond_blanks(text, 5, line_end) in after_blanks, text
    assert matched >= 20  # the draws reach the pattern's matches, not only its misses
    assert blanks >= 10


_CONTEXT_LEADS = ("", "--", "-", "CURLOPT_", "#define ", "<", "set ", "ENV ", "x = f(")
_CONTEXT_AFTER = (
    *(" is ", " was ", " for root: ", " for the bot = ", "(", '("', "( '", ", ", ',"', "%3D"),
    *(" ", "\t", ">", "=", ":", "?", "|", ")", ";", "]", "'", '"', "`", "/", "&", "+", "é"),
    *(" = ", ": ", "></x>", "\n"),
)
_CONTEXT_VALUES = ('"aB3dE5gH7jK9mN1pQ"', "aB3dE5gH7jK9mN1pQ", "s3cr3tV4lu3xyzAB%26", "'hunter2'")


def test_in_context_reads_on_only_after_a_character_of_its_starts() -> None:
    chooser = random.Random(1730)
    matched = 0
    for _ in range(20_000):
        lead = chooser.choice(_CONTEXT_LEADS)
        word = chooser.choice(("password", "token", "Password", "PASSWORD", "api_token"))
        name = "".join(chooser.choices(_NAME_PIECES[:5], k=chooser.choice((0, 0, 1))))
        after = "".join(chooser.choices(_CONTEXT_AFTER, k=chooser.randrange(1, 3)))
        text = lead + word + name + after + chooser.choice(_CONTEXT_VALUES)
        start, end = len(lead), len(lead) + len(word)
        newline = text.find("\n")
        line_end = len(text) if newline < 0 else newline
        if in_context(text, start, end, 0, line_end) is not None:
            matched += 1
            assert _follows(text, end, line_end) in CONTEXT_STARTS, text
    assert matched >= 20


def test_a_value_below_needs_an_opening_after_its_separator() -> None:
    opened = 0
    for text in _texts(40_000):
        newline = text.find("\n")
        line_end = len(text) if newline < 0 else newline
        if not may_open_below(text, 5, line_end):
            continue
        name_end = _NAME.match(text, 5, line_end).end()  # type: ignore[union-attr]
        separator = _BLANKS.match(text, name_end, line_end).end()  # type: ignore[union-attr]
        if text[separator : separator + 1] in (":", "="):  # not after a quote: the scanner's case
            opened += 1
            assert _after_blanks(text, separator + 1, line_end) in BELOW_OPENS, text
    assert opened >= 20


def _after_blanks(text: str, at: int, line_end: int) -> str:
    past = _BLANKS.match(text, at, line_end).end()  # type: ignore[union-attr]
    return text[past] if past < line_end else ""


def test_prose_shapes_after_a_spaced_name_start_with_a_word() -> None:
    chooser = random.Random(1732)
    words = ("key", "KEY", "\u212aey", "token", "\u017fecret", "for", "is", "was", "pin", "x")
    matched = 0
    for _ in range(20_000):
        after = "".join(chooser.choices((" ", "\t", *words, "=", ":", "#", "`", "1"), k=4))
        text = "name" + after
        shapes = (prose._NAME_GOES_ON, prose._WHOSE, prose._IS)
        if any(shape.match(text, 4) for shape in shapes):
            matched += 1
            assert prose._WORD_AFTER_BLANKS.match(text, 4), text
    assert matched >= 100


def test_escapes_and_byte_arrays_need_a_backslash_or_bracket_after_the_name() -> None:
    for text in _texts(20_000):
        newline = text.find("\n")
        line_end = len(text) if newline < 0 else newline
        if may_be_escaped(text, 5, line_end) or may_hold_bytes(text, 5, line_end):
            name_end = _NAME.match(text, 5, line_end).end()  # type: ignore[union-attr]
            assert re.search(r"[\\{\[]", text[name_end : min(line_end, 5 + 80)]), text


def test_a_small_word_is_its_own_name_without_a_split() -> None:
    segments = re.compile(r"[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])")
    chooser = random.Random(1731)
    for _ in range(50_000):
        name = "".join(chooser.choices("abkeyXY09_.- \téÉßǅ²٣K", k=chooser.randrange(0, 8)))
        assert name_words(name) == [word.lower() for word in segments.split(name) if word], name


def test_a_name_begins_where_walking_back_over_its_characters_stops() -> None:
    chooser = random.Random(1733)
    for _ in range(50_000):
        text = "".join(chooser.choices('aZ9_.-é٣ \t\n="[(ǅ²', k=chooser.randrange(0, 90)))
        line_start = chooser.randrange(0, len(text) + 1)
        start = chooser.randrange(line_start, len(text) + 1)
        walked = start
        floor = max(line_start, start - 64)
        while walked > floor and (text[walked - 1].isalnum() or text[walked - 1] in "_.-"):
            walked -= 1
        assert name_begins(text, start, line_start) == walked, (text, start, line_start)


def test_word_flags_say_what_the_word_is() -> None:
    for literal, anchor in zip(LITERALS, ANCHORS, strict=True):
        if not anchor.word:
            continue
        assert anchor.pass_word == (literal.lower() == "pass")
        assert anchor.bearer == (literal.lower() == "bearer")
        assert anchor.ordinary_prefix == (literal in ORDINARY_PREFIXES)


def test_only_the_ordinary_prefixes_can_be_ordinary_words() -> None:
    for literal, anchor in zip(LITERALS, ANCHORS, strict=True):
        if anchor.word and not anchor.ordinary_prefix:
            for after in ("", "ed", "sed", "H", "word", "ing "):
                text = f"by{literal}{after}"
                assert not ordinary_pass_word(text, 2, 2 + len(literal))


@pytest.mark.parametrize(
    "text",
    [
        "  - name: api_token\n    value: Zq8Xv2Lm9Tr4Wk7N\n",  # a name whose value is below
        "apiKey\nsecret = 'Zq8Xv2Lm9Tr4Wk7Nb3'",  # a name ending its line, then a value
        "password s3cr3tV4lu3\n",  # "pass" takes a value after a space
        "password\ts3cr3tV4lu3",  # ... at the text's end
        "aes_key = {0x35, 0x34, 0x9a, 0x21, 0x7e, 0x10, 0xc4, 0x55, 0x02}\n",
        'secret = "\\x73\\x33\\x63\\x72\\x33\\x74\\x56\\x34\\x6c\\x75\\x33"\n',
        "token: |\n  Zq8Xv2Lm9Tr4Wk7Nb3Yp\n",
        "Authorization: Bearer Zq8Xv2Lm9Tr4Wk7Nb3Yp5Hs\n",
    ],
)
def test_words_at_a_line_end_and_before_their_values_are_still_judged(text: str) -> None:
    assert scan_text(text), text
