"""A card is unique for unique bytes at any terminal width: the wrap never trims, merges or
hides a character, so the value can be read back exactly from the printed lines."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from safeport.cli.cards.card_text import card_lines
from safeport.cli.render import LABEL_WIDTH, SPACE_MARK, WRAP_MARK, columns, wrap_exactly
from safeport.shared.visible_text import inert_lines

WIDTHS = (24, 40, 57, 80, 81, 132, 300)


def _card(command: str) -> dict[str, object]:
    return {"id": "c-7", "fields": [["command", command]]}


def _read_back(lines: list[str], label: str) -> str:
    """What a reader recovers from the printed rows of ``label``: only the layout rules stated
    for a card's rows (``cli/render.py``: the label column, the wrap mark, the hang, the marked
    last space, the card's marks escaped inside a value)."""
    start = next(
        i
        for i, line in enumerate(lines)
        if line == label or line.startswith(f"{label:<{LABEL_WIDTH}} ")
    )
    gutter = LABEL_WIDTH + 1
    own_lines: list[str] = [lines[start][gutter:]]
    for line in lines[start + 1 :]:
        if line[:gutter].strip() == WRAP_MARK:
            own = own_lines[-1][: len(own_lines[-1]) - len(own_lines[-1].lstrip(" "))]
            body = line[gutter:]
            hang = own + "  "
            # The hang is added only when it leaves room; a reader knows which by measuring.
            if body.startswith(hang) and len(hang) <= _room(lines, gutter) // 2:
                body = body[len(hang) :]
            own_lines[-1] = _unescape_end(own_lines[-1]) + body
        elif line[:gutter].strip() == "":
            own_lines[-1] = _unescape_end(own_lines[-1])
            own_lines.append(line[gutter:])
        else:
            break
    own_lines[-1] = _unescape_end(own_lines[-1])
    return _unescape_marks("\n".join(own_lines))


_WIDTH: list[int] = [80]


def _room(lines: list[str], gutter: int) -> int:
    return _WIDTH[0] - gutter


def _unescape_end(text: str) -> str:
    # The space mark at the end of a line is always a space: the card escapes one in a value.
    return text[:-1] + " " if text.endswith(SPACE_MARK) else text


def _unescape_marks(text: str) -> str:
    # Values arrive inert (every backslash doubled), so an escape is a backslash preceded by an
    # even number of backslashes; only the card's two marks are escaped by the card itself.
    return re.sub(
        r"(?<!\\)((?:\\\\)*)\\u(21aa|2420)",
        lambda found: found.group(1) + chr(int(found.group(2), 16)),
        text,
    )


def _render_and_read(value: str, width: int) -> str:
    _WIDTH[0] = width
    return _read_back(card_lines(_card(value), width=width), "command")


def test_a_run_of_spaces_at_a_break_stays_visible_so_two_commands_never_share_a_card() -> None:
    one = "echo " + "a" * 60 + "  " + "b" * 10
    two = "echo " + "a" * 60 + " " + "b" * 10
    for width in WIDTHS:
        assert card_lines(_card(one), width=width) != card_lines(_card(two), width=width)


def test_a_trailing_space_or_a_value_ending_in_spaces_is_shown() -> None:
    lines = card_lines(_card("rm -rf /tmp/x "), width=80)
    assert "command     rm -rf /tmp/x\u2420" in lines
    assert card_lines(_card("x"), width=80) != card_lines(_card("x "), width=80)


def test_a_wrapped_line_cannot_pass_for_the_values_own_next_line() -> None:
    wrapped = "  " + "a" * 100 + " bbb"
    own_next = "  " + "a" * 100 + "\n    bbb"
    for width in WIDTHS:
        assert card_lines(_card(wrapped), width=width) != card_lines(_card(own_next), width=width)
        if width < len(wrapped) + LABEL_WIDTH + 1:
            assert any(WRAP_MARK in line for line in card_lines(_card(wrapped), width=width))


def test_an_ordinary_command_reads_as_before_at_80_columns() -> None:
    lines = card_lines(_card("uptime"), width=80)
    assert "command     uptime" in lines
    assert not any(WRAP_MARK in line for line in lines)


def test_every_line_fits_the_width_asked_for() -> None:
    value = ("a b  c   " * 40) + "\n" + (" " * 30) + ("x " * 80)
    for width in WIDTHS:
        assert all(columns(line) <= width for line in card_lines(_card(value), width=width))


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            [*'ab \n{}"\\:,-u0', "\u00e9", "\u2028", "\u21aa", "\u2420", "\u4e2d"]
        ),
        max_size=300,
    ),
    st.sampled_from(WIDTHS),
)
def test_the_value_reads_back_exactly_from_the_card_at_any_width(value: str, width: int) -> None:
    # The gateway sends every value inert (hidden characters escaped, backslashes doubled); that
    # text must come back whole from the printed rows, whatever the width.
    sent = inert_lines(value)
    assert _render_and_read(sent, width) == sent


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=" ab", max_size=200),
    st.integers(min_value=20, max_value=200),
    st.integers(min_value=0, max_value=10),
)
def test_wrapping_keeps_every_character(text: str, room: int, hang: int) -> None:
    pieces = wrap_exactly(text, room, hang)
    assert "".join(pieces) == text
    assert all(piece for piece in pieces[1:])
