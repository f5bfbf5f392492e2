"""A card read where a human reads it: on a terminal that counts columns, not characters.

A terminal gives an East Asian wide character (and, in a CJK locale, an "ambiguous" one such as
``é``) two columns. A card line measured in characters can then be wider than the terminal,
which wraps it itself, with no mark, and leaves the last column blank when a wide character
does not fit there: a blank that reads exactly like a space. These tests put the card on a
model of such a terminal (xterm's rules) and compare what a person would see.
"""

from __future__ import annotations

import shlex
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from safeport.action_gateway.approvals.cards import argument_lengths
from safeport.cli.cards.card_text import card_lines, readable_at
from safeport.cli.render import MIN_CARD_WIDTH, columns
from safeport.shared.visible_text import inert


def _cells(char: str, *, cjk_locale: bool) -> int:
    wide = "WFA" if cjk_locale else "WF"
    return 2 if unicodedata.east_asian_width(char) in wide else 1


def screen(lines: list[str], width: int, *, cjk_locale: bool = False) -> list[str]:
    """The rows a terminal of ``width`` columns shows: a character that does not fit in what
    is left of a row goes to the start of the next one; trailing blanks are not seen."""
    rows: list[str] = []
    for line in lines:
        row: list[str] = []
        used = 0
        for char in line:
            cells = _cells(char, cjk_locale=cjk_locale)
            if used + cells > width:
                rows.append("".join(row))
                row, used = [], 0
            row.append(char)
            used += cells
        rows.append("".join(row))
    return [row.rstrip() for row in rows]


def _echo_card(message: str) -> dict[str, object]:
    command = shlex.join(["echo", message])
    return {
        "id": "c-7",
        "fields": [["command", inert(command)], ["lengths", argument_lengths({"msg": message})]],
    }


# Same length (the lengths row agrees), one space moved from one row's end to another's: on an
# xterm 20 or 22 columns wide, both rows end where a wide character did not fit.
SPACE_MOVED = {
    20: ("a 中中中中中中中中中b中", "a中中中中中中中中中b 中"),
    22: ("中" * 17 + "a " + "中" * 10 + "b中", "中" * 17 + "a" + "中" * 10 + "b 中"),
}


def test_two_commands_a_space_apart_never_share_a_screen_at_any_width() -> None:
    for one, two in SPACE_MOVED.values():
        assert len(one) == len(two) and one != two
        for width in range(16, 130):
            first = screen(card_lines(_echo_card(one), width=width), width)
            second = screen(card_lines(_echo_card(two), width=width), width)
            if readable_at(width):
                assert first != second, width
            else:
                # Too narrow to lay out exactly: neither value is shown, only that it waits.
                assert first == second
                assert not any("中" in row for row in first)
                assert "widen" in " ".join(first)


WIDE_TEXT = st.text(
    alphabet=st.sampled_from(["a", " ", "中", "é", "\u00b7", "\U0001f600", "\uff21", "\u21aa"]),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(WIDE_TEXT, st.integers(min_value=MIN_CARD_WIDTH, max_value=200), st.booleans())
def test_no_card_line_is_wider_than_the_terminal(message: str, width: int, cjk: bool) -> None:
    # With every line within the width, the terminal never wraps one itself: each screen row
    # is one card line, and the card's own rules (the wrap mark, the escaped last space) are
    # all a reader needs to read the value back.
    lines = card_lines(_echo_card(message), width=width)
    assert all(sum(_cells(char, cjk_locale=cjk) for char in line) <= width for line in lines)
    assert screen(lines, width, cjk_locale=cjk) == [line.rstrip() for line in lines]


def test_columns_counts_every_non_ascii_character_as_two() -> None:
    assert columns("uptime") == 6
    assert columns("中a") == 3
    assert columns("é") == 2  # one column in most locales, two in a CJK one: the most is kept


def test_a_plain_ascii_card_reads_as_before() -> None:
    lines = card_lines(_echo_card("hello"), width=80)
    assert lines[0] == "── approval requested · card c-7 · time left unknown"
    assert "command     echo hello" in lines
    assert "lengths     msg 5 characters" in lines


def test_a_narrow_but_readable_terminal_puts_the_id_in_a_row_of_its_own() -> None:
    lines = card_lines(_echo_card("hello"), width=MIN_CARD_WIDTH)
    assert lines[0] == "── approval requested"
    assert lines[1] == "card        c-7"
    assert lines[2] == "time left   unknown"
    assert all(len(line) <= MIN_CARD_WIDTH for line in lines)
