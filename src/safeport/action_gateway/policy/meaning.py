"""What a policy edit means, said in words: the diff of meaning shown beside the text diff.

A text diff shows what the file's characters became; this compares the two *parsed* policies,
so nothing a text can hide from a reader (a table folded into a comment by a character the
terminal breaks at, a key moved elsewhere, a default that applies once a line is gone) changes
what is said here. Every field of the model is compared, so a field added to the schema later
is reported too before anyone writes a sentence for it; the fields that decide who may ask for
what, how often and under which approval get their own sentence, loosened or tightened, in
``meaning_rules.py``. Every other field's direction is in ``directions.py``, by its place in
the schema; one whose direction cannot be computed (a pattern, an argv, an address) is said as
loosened, never as a neutral "changed". A table moved to another credential is said with what
that credential's approval and rate cap make of it. Values are shown whole. Pure: the CLI
renders the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from safeport.action_gateway.policy.directions import Direction, direction
from safeport.action_gateway.policy.meaning_rules import RULES, Path, Said, Weight, more, say
from safeport.action_gateway.policy.words import (
    credential_words,
    entity_kind,
    matches,
    shown,
    target,
    where,
)
from safeport.errors import ConfigError
from safeport.shared.schemas.config import GatewayPolicy, parse_gateway_policy

_ORDER: dict[Weight, int] = {"loosened": 0, "changed": 1, "tightened": 2}


@dataclass(frozen=True)
class MeaningChange:
    """One change in what the policy allows; ``text`` holds only printable ASCII."""

    weight: Weight
    text: str

    def line(self) -> str:
        return f"{self.weight.upper():<9}  {self.text}"


def meaning_of_edit(
    accepted_text: str | None, proposed: GatewayPolicy
) -> tuple[MeaningChange, ...]:
    """The changes from the accepted text (None: nothing accepted yet) to ``proposed``."""
    if accepted_text is None:
        return meaning_changes(None, proposed)
    try:
        accepted, _ = parse_gateway_policy(accepted_text)
    except ConfigError:
        # Accepted under an older, laxer schema: compare with the defaults, and say so, since
        # a limit only the old text set is then missing from the list below.
        unread = MeaningChange("loosened", _UNREADABLE)
        return (unread, *meaning_changes(None, proposed))
    return meaning_changes(accepted, proposed)


_UNREADABLE = (
    "the accepted policy does not parse under this version, so what follows is compared "
    "with the defaults: a limit only the accepted policy set is NOT listed"
)


def meaning_lines(changes: tuple[MeaningChange, ...], *, first: bool) -> list[str]:
    """The changes as `sp policy check` and `accept` print them, under one heading; ``first``:
    nothing was accepted before, so the comparison is with the defaults."""
    against = "the defaults (nothing accepted yet)" if first else "the accepted policy"
    if not changes:
        return [f"what it means, against {against}: no change (only comments, layout or order)"]
    # The count closes the list, just above the prompt: a list longer than the screen has
    # scrolled its first lines (the loosenings) away, and the count still says they are there.
    counts = ", ".join(
        f"{sum(c.weight == weight for c in changes)} {weight.upper()}" for weight in _ORDER
    )
    return [
        f"what it means, against {against}:",
        *(f"  {c.line()}" for c in changes),
        f"in all: {counts} (loosenings listed first)",
    ]


def meaning_changes(
    accepted: GatewayPolicy | None, proposed: GatewayPolicy
) -> tuple[MeaningChange, ...]:
    """Every difference between two policies, loosening first; None = nothing accepted yet."""
    out = Said(accepted or GatewayPolicy(), proposed)
    if accepted is None and proposed.callers is None:
        say(out, "loosened", _NO_CALLERS)
    _compare((), out.old, proposed, out)
    changes = (MeaningChange(weight, text) for weight, text in out.changes)
    return tuple(sorted(changes, key=lambda change: _ORDER[change.weight]))


_NO_CALLERS = (
    "there is no [callers] table: ANY process of your uid may propose actions "
    "(approval still applies)"
)


def _compare(path: Path, old: object, new: object, out: Said) -> None:
    if old == new:
        return
    for pattern, rule in RULES:
        if matches(pattern, path) and rule(path, old, new, out):
            return
    if isinstance(old, BaseModel) and type(old) is type(new):
        for name in type(old).model_fields:
            _compare((*path, name), getattr(old, name), getattr(new, name), out)
    elif isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(old.keys() - new.keys()):
            _removed((*path, str(key)), old[key], out)
        for key in sorted(new.keys() - old.keys()):
            _added((*path, str(key)), new[key], out)
        for key in sorted(old.keys() & new.keys()):
            _compare((*path, str(key)), old[key], new[key], out)
    elif isinstance(old, list) and isinstance(new, list):
        _list_changed(path, old, new, out)
    else:
        _value_changed(path, old, new, out)


def _added(path: Path, value: object, out: Said) -> None:
    kind = entity_kind(path)
    if kind in ("ssh host", "http service", "sql database"):
        children = {"ssh host": "commands", "http service": "operations"}.get(kind, "queries")
        names = ", ".join(shown(name) for name in getattr(value, children, {}))
        credential = out.new.credentials.get(str(getattr(value, "credential", "")))
        say(
            out,
            "loosened",
            f"{where(path)} is added ({target(value)}), {children}: {names or 'none'}; "
            f"its credential {shown(getattr(value, 'credential', None))}: "
            f"{credential_words(credential)}",
        )
        for name, child in getattr(value, children, {}).items():
            _added((*path, children, name), child, out)
    elif kind in ("ssh command", "sql query"):
        argv = shown(getattr(value, "argv", getattr(value, "statement", [])))
        say(out, "loosened", f"an agent may now propose {where(path)}: {argv}")
    elif kind == "http operation":
        call = f"{getattr(value, 'method', '?')} {shown(getattr(value, 'path', ''))}"
        say(out, "loosened", f"an agent may now propose {where(path)}: {call}")
    elif kind == "credential":
        say(out, "changed", f"{where(path)} is declared: {credential_words(value)}")
    else:
        say(out, _unknown(path), f"{where(path)} is added: {shown(value)}")


def _removed(path: Path, value: object, out: Said) -> None:
    kind = entity_kind(path)
    if kind in ("ssh command", "http operation", "sql query"):
        say(out, "tightened", f"an agent may no longer propose {where(path)}")
    elif kind in ("ssh host", "http service", "credential", "sql database"):
        say(out, "tightened", f"{where(path)} is removed")
    else:
        # A query parameter, a header or a param gone can let more through as easily as less.
        say(out, _unknown(path), f"{where(path)} is removed (was {shown(value)})")


def _list_changed(path: Path, old: list[object], new: list[object], out: Said) -> None:
    way = direction(path)
    if way != "more":
        # Order counts (an argv): the whole list before and after, in its order.
        say(out, _unknown(path), f"{where(path)} changes from {shown(old)} to {shown(new)}")
        return
    gone = [item for item in old if item not in new]
    came = [item for item in new if item not in old]
    parts = []
    if came:
        parts.append(f"adds {shown(came)}")
    if gone:
        parts.append(f"drops {shown(gone)}")
    if not parts:
        parts.append(f"changes order: {shown(old)} -> {shown(new)}")
    # A value added is allowed now, whatever else was dropped beside it.
    weight: Weight = "loosened" if came else "tightened" if gone else "changed"
    say(out, weight, f"{where(path)} {'; '.join(parts)}")


def _value_changed(path: Path, old: object, new: object, out: Said) -> None:
    way = direction(path)
    weight = _unknown(path)
    if way == "true" and isinstance(old, bool) and isinstance(new, bool):
        weight = "loosened" if new else "tightened"
    elif way == "factor":  # a security key turned on tightens; turned off, it loosens
        weight = "tightened" if new in ("key", True) else "loosened"
    elif way in ("bigger", "smaller") and _bound(old) and _bound(new):
        # None is no bound at all: the biggest upper bound, the smallest lower one.
        wider = _wider(old, new) if way == "bigger" else _wider(new, old)
        weight = "loosened" if wider else "tightened"
    say(out, weight, f"{where(path)} changes from {shown(old)} to {shown(new)}")


def _unknown(path: Path) -> Weight:
    """A change whose direction no rule computes: loosened, unless the field decides nothing."""
    way: Direction = direction(path)
    return "changed" if way == "words" else "loosened"


def _wider(old: object, new: object) -> bool:
    """Whether the upper bound ``new`` allows more than ``old`` (None: unbounded)."""
    if new is None or old is None:
        return new is None
    return more(new, old)


def _bound(value: object) -> bool:
    return value is None or _number(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
