"""An approval card as plain lines that read well at 80 columns (rendering only).

Every value arrives from the gateway already inert (control, ANSI and bidi characters escaped,
backslashes doubled); each is passed through :func:`~safeport.shared.visible_text.visible`
again here, so a card never depends on the other side for that. That rule leaves inert text as
it is, so a backslash is not doubled a second time. The rows are laid out by
:func:`safeport.cli.render.labelled_lines`: labels in one column, a value too long for the line
wrapped under itself with a mark, nothing cut.
"""

from __future__ import annotations

import json
import math
import textwrap
from typing import Any

from safeport.cli.cards.card_chain import FoldedChain, fold_ancestors
from safeport.cli.render import MIN_CARD_WIDTH, columns, labelled_lines
from safeport.shared.visible_text import visible


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
    (:mod:`~safeport.cli.cards.card_chain`): the requester, its client, every process with a warning
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
    # body the gateway indented), and every line of it is escaped as the row is laid out
    # (:func:`safeport.cli.render.labelled_lines`).
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
    out += labelled_lines(rows, width)
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
