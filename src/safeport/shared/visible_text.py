"""Which characters a human can be trusted to see: everything else is written as an escape.

``str.isprintable`` is not enough for text a person approves: it lets through characters that
take no room or look like a space (a Hangul filler, a braille blank, a no-break space), marks
that combine with their neighbour, variation selectors and other default-ignorable code points,
private-use and unassigned ones. With any of them, two different values can look the same on a
terminal. The gateway's cards and every line ``sp`` prints of outside text use this one rule.

:func:`inert` is how outside text is shown: every such character as an escape, and the
backslash itself doubled, so an escape typed as text (``\\u001b``) never reads like one that
stands for a real character. :func:`visible` is the rule alone; it leaves text that is already
inert as it is, so a client re-showing the gateway's inert card text never doubles a backslash
a second time. :func:`visible_exactly` is for a file a person reviews (a policy diff): as
:func:`visible`, and an escape typed as text is itself escaped, so every escape shown stands for
one real character while the file's other backslashes (a regular expression's) read as typed.

:data:`Inert` is the type of text that went through :func:`inert` (or :func:`inert_lines`), so a
card that takes only ``Inert`` values cannot be given a requester's string that did not: text
the program writes itself becomes ``Inert`` through :func:`checked_inert`, which refuses any
character the rule would have escaped rather than trust it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import NewType

# Text safe to show a person: built only by the functions below, never by a cast elsewhere.
Inert = NewType("Inert", str)

# Letters and symbols that render as nothing or as blank space although they are "printable".
_BLANK_LOOKALIKES = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5")
# Marks (combining, enclosing), format characters, separators other than the ASCII space,
# private use, unassigned and surrogates.
_HIDDEN_CATEGORIES = frozenset({"Mn", "Me", "Cf", "Zs", "Zl", "Zp", "Co", "Cn", "Cs", "Cc"})


@lru_cache(maxsize=4096)
def needs_escape(char: str) -> bool:
    """Whether ``char`` must be shown as an escape rather than as itself."""
    if char == " ":
        return False
    if char.isascii():
        return not char.isprintable()
    return (
        not char.isprintable()
        or char in _BLANK_LOOKALIKES
        or unicodedata.category(char) in _HIDDEN_CATEGORIES
    )


def escape_code(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every character a human cannot be trusted to see written as an escape."""
    if text.isascii() and text.isprintable():
        return text  # the common case, at no cost
    return "".join(escape_code(char) if needs_escape(char) else char for char in text)


def visible_exactly(text: str) -> str:
    """:func:`visible`, and a backslash before ``u`` or ``U`` written as ``\\u005c``.

    Without it ``'\\u2028'`` typed in a TOML literal string (six characters) and a real U+2028
    would be shown the same; with it, ``\\uXXXX`` on screen always means the one character, and
    no two different lines look alike.
    """
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    out = []
    for index, char in enumerate(text):
        typed_escape = char == "\\" and text[index + 1 : index + 2] in ("u", "U")
        if typed_escape or needs_escape(char):
            out.append(escape_code(char))
        else:
            out.append(char)
    return "".join(out)


def inert(text: str) -> Inert:
    """``text`` safe to show a person: every character they could not see as itself written as
    an escape, and the backslash itself escaped, so no two different texts look the same."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return Inert(text)
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif needs_escape(char):
            out.append(escape_code(char))
        else:
            out.append(char)
    return Inert("".join(out))


def line_by_line(render: Callable[[str], str], text: str) -> str:
    """``render`` applied to each line: a value's own line breaks (an indented JSON body's)
    stay line breaks, while a line break inside a rendered line would be escaped."""
    return "\n".join(render(line) for line in text.split("\n"))


def inert_lines(text: str) -> Inert:
    """:func:`inert`, line by line."""
    return Inert(line_by_line(inert, text))


def checked_inert(text: str, *, lines: bool = False) -> Inert:
    """Text the program wrote itself (a fixed sentence, a number, JSON it escaped), typed as
    :data:`Inert` once it is checked to hold no character :func:`visible` would escape, and no
    line break unless ``lines``. A value that fails is a bug here, never shown: ValueError."""
    shown = line_by_line(visible, text) if lines else visible(text)
    if shown != text:
        raise ValueError("text meant for a card holds a character that must be escaped")
    return Inert(text)
