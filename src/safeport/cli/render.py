"""Terminal rendering shared by commands (outside text itself is shown through
:func:`safeport.shared.visible_text.inert`): a policy diff in colour, and labelled rows laid out
to the terminal's width as an approval card's are.

Labels sit in one column; a value too long for the line wraps under itself, keeping its own
indentation, so an indented JSON body stays readable; nothing is cut. A continuation is marked
``↪`` in the label column and a space a line ends with is shown as ``␠``; the same characters
inside a value are shown as their escapes (``\\u21aa``, ``\\u2420``), so neither mark can be
imitated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from safeport.shared.visible_text import escape_code, line_by_line, visible

if TYPE_CHECKING:
    from safeport.action_gateway.policy.store import DiffLine


_DIFF_STYLES = {
    "file": {"bold": True},
    "hunk": {"fg": "cyan"},
    "added": {"fg": "green"},
    "removed": {"fg": "red"},
    "same": {},
}


def diff_text(lines: Iterable[DiffLine], *, colour: bool) -> str:
    """A unified diff for the terminal, one line per line, coloured when ``colour``."""
    import click

    rendered = [
        click.style(line.text, **_DIFF_STYLES[line.kind]) if colour else line.text  # type: ignore[arg-type]
        for line in lines
    ]
    return "\n".join(rendered) if rendered else "no changes"


# The label column of a card's rows, in terminal columns.
LABEL_WIDTH = 11


def labelled_lines(rows: list[tuple[str, str]], width: int) -> list[str]:
    """``rows`` laid out as a card's are, for another list a person reads (``sp context clients
    list``): a label column, each value wrapped under itself with :data:`WRAP_MARK`, no line
    wider than ``width`` (at least :data:`MIN_CARD_WIDTH`). A long outside value (a client's name
    padded with spaces) is then never wrapped by the terminal into what reads as a row of its
    own."""
    width = max(width, MIN_CARD_WIDTH)
    return [line for label, value in rows for line in _row(visible(label), value, width)]


def _row(label: str, value: str, width: int) -> list[str]:
    """``label  value``; each of the value's own lines wraps under itself.

    The card must be unique for unique bytes at any width, so a wrap never drops or merges a
    character: a piece that ends in a space shows that last space as :data:`SPACE_MARK` (a
    terminal shows a trailing space as nothing, and two values differing only there would print
    the same), and a continuation carries :data:`WRAP_MARK` in the label column, where no value
    is ever written, so a wrapped line cannot pass for the value's own next line. Both marks are
    the card's own: the same characters inside a value are shown as their escapes
    (:func:`card_visible`), so ``␠`` at the end of a line always stands for a space. Widths are
    counted in terminal columns (:func:`columns`), so no line is wider than the terminal and the
    terminal never wraps one itself, where no mark would show it.
    """
    indent = " " * (LABEL_WIDTH + 1)
    mark = " " * (LABEL_WIDTH - 1) + WRAP_MARK + " "
    room = width - len(indent)
    lines: list[str] = []
    label = card_visible(label)
    if columns(label) > LABEL_WIDTH:
        # A label wider than its column stands on a line of its own, the value under it.
        lines += [_shown_end(piece) for piece in wrap_exactly(label, width, 0)]
        label = ""
    for number, raw in enumerate(line_by_line(card_visible, value).split("\n")):
        own = raw[: len(raw) - len(raw.lstrip(" "))]
        # Keep a wrapped JSON body readable: a continuation sits under its own line's text.
        hang = own + "  " if len(own) + 2 <= room // 2 else ""
        # The mark is one column on every terminal we know, but measured as any non-ASCII
        # character is (two), so a terminal that draws it wide still does not wrap the line.
        beside_mark = len(hang) + columns(WRAP_MARK) - 1
        for index, piece in enumerate(wrap_exactly(raw, room, beside_mark)):
            if number == 0 and index == 0:
                # Padded by columns, not characters: a wide label character takes two.
                head = label + " " * (LABEL_WIDTH - columns(label) + 1)
            else:
                head = indent if index == 0 else mark + hang
            lines.append((head + _shown_end(piece)).rstrip())
    return lines


WRAP_MARK = "\u21aa"  # ↪, in the label column: this line goes on from the one above
SPACE_MARK = "\u2420"  # ␠, at the end of a line: a space the line ended with
_MARKS = frozenset((WRAP_MARK, SPACE_MARK))
# The label column and the narrowest room a value needs: a piece ending in a marked space, with
# a hang of at most half the room beside it.
MIN_CARD_WIDTH = LABEL_WIDTH + 1 + 12


def card_visible(text: str) -> str:
    """:func:`visible`, and the card's own marks written as escapes: a ``␠`` or ``↪`` a card
    shows is always the card's, never a character of the value."""
    shown_text = visible(text)
    if shown_text.isascii():
        return shown_text
    return "".join(escape_code(char) if char in _MARKS else char for char in shown_text)


def columns(text: str) -> int:
    """The most terminal columns ``text`` can take: one per ASCII character, two for any other.

    Terminals disagree on the width of many characters (East Asian "ambiguous" ones, emoji,
    anything newer than their tables), and one that counts a character wider than the card
    did wraps the line itself, where no mark shows it. Two columns is the most any terminal
    gives one code point (those that take none are escaped before this is asked), so a line
    measured this way is never wider on screen than it was here.
    """
    return len(text) if text.isascii() else sum(1 if char.isascii() else 2 for char in text)


def wrap_exactly(text: str, room: int, hang: int) -> list[str]:
    """``text`` in pieces whose concatenation is ``text`` exactly (nothing dropped, trimmed or
    replaced). A piece breaks after a space where one falls in the second half of the line, else
    at the width; the first piece has ``room`` columns, the others ``room - hang``, and a piece
    ending in a space keeps room for that space's mark. Widths are :func:`columns`."""
    pieces: list[str] = []
    rest = text
    while True:
        fits = room if not pieces else room - hang
        if _shown_columns(rest) <= fits:
            pieces.append(rest)
            return pieces
        take = _longest_prefix(rest, fits)
        space = take.rfind(" ")
        if space >= 0 and columns(take[:space]) >= fits // 2:
            take = take[: space + 1]
        while take.endswith(" ") and _shown_columns(take) > fits and len(take) > 1:
            take = take[:-1]
        pieces.append(take)
        rest = rest[len(take) :]


def _longest_prefix(text: str, fits: int) -> str:
    """The longest start of ``text`` that takes at most ``fits`` columns (one character at
    least, so a wrap always moves on)."""
    used = 0
    for index, char in enumerate(text):
        used += columns(char)
        if used > fits:
            return text[: max(index, 1)]
    return text


def _shown_columns(piece: str) -> int:
    # The space mark is measured as two columns, as any non-ASCII character is.
    return columns(piece) + (columns(SPACE_MARK) - 1 if piece.endswith(" ") else 0)


def _shown_end(piece: str) -> str:
    return piece[:-1] + SPACE_MARK if piece.endswith(" ") else piece
