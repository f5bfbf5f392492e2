"""An approval card as plain lines that read well at 80 columns (rendering only).

Every value arrives from the gateway already inert (control, ANSI and bidi characters escaped,
backslashes doubled); each is passed through :func:`~safeport.shared.visible_text.visible`
again here, so a card never depends on the other side for that. That rule leaves inert text as
it is, so a backslash is not doubled a second time. Labels sit in
one column; a value too long for the line wraps under itself, keeping its own indentation, so
an indented JSON body stays readable; nothing is cut. A continuation is marked ``↪`` in the
label column and a space a line ends with is shown as ``␠``; the same characters inside a value
are shown as their escapes (``\\u21aa``, ``\\u2420``), so neither mark can be imitated.
"""

from __future__ import annotations

import json
import math
import textwrap
from typing import Any

from safeport.cli.card_chain import FoldedChain, fold_ancestors
from safeport.shared.visible_text import escape_code, line_by_line, visible

LABEL_WIDTH = 11


def card_lines(
    card: dict[str, Any],
    *,
    width: int = 80,
    expires_in_s: int | None = None,
    whole_chain: bool = False,
    unfold_hint: str = "",
) -> list[str]:
    """The card, top to bottom: who asks, what would run, with which credential, what a yes
    allows and the time left, then the requester's process chain.

    ``whole_chain`` False folds the chain to what differs from the usual
    (:mod:`~safeport.cli.card_chain`): the requester, its client, every process with a warning
    and the first unusual ancestor, one short line each, and one line counting the rest, which
    ends with ``unfold_hint`` (how this view shows them all). True shows every process with its
    digest, script and variables. No line is wider than ``width`` columns: a terminal that wraps
    a line itself shows no mark where it did, so it could make two values look alike. Below
    :data:`MIN_CARD_WIDTH` a card cannot be laid out that way, and only that is said (see
    :func:`readable_at`)."""
    card_id = visible(shown(card.get("id")))
    if not readable_at(width):
        return textwrap.wrap(
            f"card {card_id} is waiting, but this terminal is {width} columns wide and a card "
            f"needs {MIN_CARD_WIDTH} to be shown exactly: widen it to read and answer the card",
            max(width, 1),
            break_on_hyphens=False,
        )
    left = human_duration(card.get("expires_in_s") if expires_in_s is None else expires_in_s)
    header = f"── approval requested · card {card_id} · time left {left}"
    out: list[str] = [header] if columns(header) <= width else ["── approval requested"]
    rows: list[tuple[str, str]] = []
    if columns(header) > width:
        rows += [("card", card_id), ("time left", left)]
    # These rows are one line each: a line break in one (a remote client's name is the target)
    # is shown as its escape, never as a row of its own. Only a field may span lines (a JSON
    # body the gateway indented), and every line of it is escaped in :func:`_row`.
    rows += [
        ("asked by", visible(user_text(card.get("user")))),
        *_action_rows(card),
        # What runs exactly, as the executor will run it (host and command, URL and body...).
        *[(shown(label), shown(value, "")) for label, value in _pairs(card.get("fields"))],
        ("credential", visible(shown(card.get("credential")))),
        ("a yes", visible(shown(card.get("scope_text") or card.get("scope")))),
    ]
    key = card.get("key")
    if isinstance(key, dict):  # which key will sign, or what to do when none is enrolled
        names = ", ".join(shown(k.get("name")) for k in _dicts(key.get("keys")))
        rows.append(("signed by", f"a touch of security key {names}" if names else
                     "no security key is enrolled: run `sp approver enroll`"))  # fmt: skip
    rows += chain_rows(card, whole=whole_chain, unfold_hint=unfold_hint)
    for label, value in rows:
        out += _row(visible(label), value, width)
    if not card.get("showable", True):
        out += textwrap.wrap("this card cannot be shown whole, so it cannot be approved", width)
    return out


# The effects the gateway writes for an action; another (a remote client's grant) has a row.
_SHORT_EFFECTS = frozenset({"read-only", "may change things"})


def _action_rows(card: dict[str, Any]) -> list[tuple[str, str]]:
    """``ssh_exec host / command · read-only``: the effect joins the action's line only when
    that line holds no space of its own (policy names hold none), so nothing the requester
    names can look like the effect; any other effect is a row of its own."""
    action = visible(
        f"{shown(card.get('action'))} {shown(card.get('target'))} / {shown(card.get('operation'))}"
    )
    effect = visible(
        shown(card.get("effect") or ("read-only" if card.get("read_only") else "may change things"))
    )
    if effect in _SHORT_EFFECTS and action.count(" ") == 3:
        return [("action", f"{action} · {effect}")]
    return [("action", action), ("effect", effect)]


def chain_rows(
    card: dict[str, Any], *, whole: bool, unfold_hint: str = ""
) -> list[tuple[str, str]]:
    """The requester's chain as a card's rows: folded (see :func:`card_lines`) or whole."""
    chain = _dicts(card.get("requester"))
    raw_client = card.get("client")
    client = raw_client if isinstance(raw_client, dict) and raw_client else None
    label = card.get("client_label")
    if whole:
        rows = [
            ("requester" if index == 0 else f"parent {index}", process_text(proc))
            for index, proc in enumerate(chain)
        ]
        if client or label:
            rows.append(("client", client_text(client or {}, label)))
        return [(name, visible(value)) for name, value in rows]
    rows = [("requester", process_brief(chain[0]))] if chain else []
    if client or label:
        named = f" · entry {shown(label)} (claimed)" if label else ""
        rows.append(("client", process_brief(client) + named if client else named[3:]))
    folded = fold_ancestors(chain, client)
    rows += [(f"parent {place}", process_brief(proc)) for place, proc in folded.shown]
    if folded.folded:
        rows.append(("ancestors", fold_text(folded) + (f"; {unfold_hint}" if unfold_hint else "")))
    # One line each: a line break in a program's path is shown as its escape, never as a row.
    return [(name, visible(value)) for name, value in rows]


def fold_text(folded: FoldedChain) -> str:
    """``+8 usual (...)``: how many ancestors a folded card leaves out, and whether any of those
    is unusual (none has a warning: a process with one is never folded)."""
    if not folded.folded_unusual:
        return f"+{folded.folded} usual (packaged or signed, no warning)"
    return f"+{folded.folded} more, {folded.folded_unusual} of them unusual (no warning)"


def shown(value: object, absent: str = "-") -> str:
    """A value as a card shows it: absent (None, empty) is ``absent``, never Python's None."""
    if value is None or value == "":
        return absent
    if isinstance(value, str | int | float):
        return str(value)
    # Not a shape the gateway sends: shown as the JSON it came as (null, not None).
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def human_duration(seconds: object) -> str:
    """``42 s``, ``5 min``, ``12 h``, ``3 d``: the unit a person reads at a glance (rounded)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return "unknown"
    if not math.isfinite(seconds):
        return "unknown"  # infinity or NaN: no deadline a person could read
    left = max(0, round(seconds))
    if left < 120:
        return f"{left} s"
    if left < 2 * 3600:
        return f"{round(left / 60)} min"
    if left < 2 * 86400:
        return f"{round(left / 3600)} h"
    return f"{round(left / 86400)} d"


def outcome_text(outcome: object, detail: object) -> str:
    """What an approved card's action did: ``done · 201``, ``refused · why``, ``failed · why``."""
    return f"{shown(outcome, 'unknown')} · {shown(detail, 'no detail')}"


def client_text(client: dict[str, Any], label: object = None) -> str:
    """The program the requester runs under, and the label its MCP client entry gives the
    context server (``--origin``; the process's own claim)."""
    named = f"entry {shown(label)} (claimed)" if label else ""
    if not client:
        return named or "unknown"
    text = f"pid {shown(client.get('pid'))} {shown(client.get('exe'))}"
    return f"{text} · {named}" if named else text


def _pairs(value: object) -> list[tuple[object, object]]:
    if not isinstance(value, list | tuple):
        return []
    return [
        (item[0], item[1]) for item in value if isinstance(item, list | tuple) and len(item) == 2
    ]


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def readable_at(width: int) -> bool:
    """Whether a card can be shown exactly at ``width`` columns; a client must not take a yes
    for a card it could not show (it says so, and asks for a wider terminal)."""
    return width >= MIN_CARD_WIDTH


def user_text(user: object) -> str:
    """The human whose process asks: name and uid (with several humans served, approving
    another's proposal unknowingly is the mistake this line prevents)."""
    if not isinstance(user, dict):
        return "unknown user"
    name = user.get("name")
    return f"{shown(name, 'no such user')} (uid {shown(user.get('uid'))})"


def process_brief(proc: dict[str, Any]) -> str:
    """One process in a short line: pid, program, what vouches for it, and every warning (an
    unreadable environment, code injected, a script changed); digests are in the whole chain."""
    words = [f"pid {shown(proc.get('pid'))} {shown(proc.get('exe'))} ({_vouched(proc)})"]
    if proc.get("interpreter"):
        words.append(f"script (claimed) {shown(proc.get('script'))}")
    return "; ".join(words + _warnings(proc))


def process_text(proc: dict[str, Any]) -> str:
    """One process line of a card: digest and what vouches for it once, the script only for an
    interpreter, then every variable that injects code into it (or that none could be read).

    The binary is what the kernel maps, so it is attested; an interpreter's script is what its
    command line says, which the process can rewrite, so it is labelled a claim."""
    digest = shown(proc.get("sha256"), "unreadable")[:16]
    kind = "interpreter (attested) " if proc.get("interpreter") else ""
    words = [
        f"pid {shown(proc.get('pid'))} {kind}{shown(proc.get('exe'))} sha256 {digest} "
        f"({_vouched(proc)})"
    ]
    if proc.get("interpreter"):
        script_digest = shown(proc.get("script_sha256"))[:16]
        script_verified = proc.get("script_verified")
        words.append(
            f"script (claimed by the process) {shown(proc.get('script'))} sha256 {script_digest}"
            + (f" ({shown(script_verified)})" if script_verified else "")
            + (" CHANGED after the process started" if proc.get("script_changed") else "")
        )
    return "; ".join(words + _warnings(proc, with_script=False))


def _vouched(proc: dict[str, Any]) -> str:
    return shown(proc.get("verified") or f"signature {shown(proc.get('signature'), 'unknown')}")


def _warnings(proc: dict[str, Any], *, with_script: bool = True) -> list[str]:
    words = []
    if with_script and proc.get("interpreter") and proc.get("script_changed"):
        words.append("script CHANGED after the process started")
    if proc.get("environ") == "unreadable":
        words.append("ENVIRONMENT UNREADABLE")
    for pair in _pairs(proc.get("injected_env")):
        words.append(f"INJECTS CODE: {shown(pair[0])}={shown(pair[1], '')}")
    return words


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
