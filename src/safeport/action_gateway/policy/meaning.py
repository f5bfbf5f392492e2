"""What a policy edit means, said in words: the diff of meaning shown beside the text diff.

A text diff shows what the file's characters became; this compares the two *parsed* policies,
so nothing a text can hide from a reader (a table folded into a comment by a character the
terminal breaks at, a key moved elsewhere, a default that applies once a line is gone) changes
what is said here. Every field of the model is compared, so a field added to the schema later
is reported too before anyone writes a sentence for it; the fields that decide who may ask for
what, how often and under which approval get their own sentence, loosened or tightened. Every
other field's direction is in ``directions.py``, by its place in the schema; one whose
direction cannot be computed (a pattern, an argv, an address) is said as loosened, never as a
neutral "changed". A table moved to another credential is said with what that credential's
approval and rate cap make of it. Values are shown whole. Pure: the CLI renders the result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from safeport.action_gateway.policy.directions import Direction, direction
from safeport.action_gateway.policy.words import (
    credential_words,
    entity_kind,
    matches,
    shown,
    target,
    where,
)
from safeport.errors import ConfigError
from safeport.shared.schemas.config import (
    CallerRule,
    GatewayPolicy,
    HttpService,
    SqlDatabase,
    SshHost,
    parse_gateway_policy,
)

Weight = Literal["loosened", "changed", "tightened"]
_ORDER: dict[Weight, int] = {"loosened": 0, "changed": 1, "tightened": 2}
Path = tuple[str, ...]


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
    out = _Said(accepted or GatewayPolicy(), proposed)
    if accepted is None and proposed.callers is None:
        _say(out, "loosened", _NO_CALLERS)
    _compare((), out.old, proposed, out)
    return tuple(sorted(out.changes, key=lambda change: _ORDER[change.weight]))


@dataclass
class _Said:
    """The changes said so far, and both policies, for a sentence that follows a reference
    (a host's credential) from one table to another."""

    old: GatewayPolicy
    new: GatewayPolicy
    changes: list[MeaningChange] = field(default_factory=list)


_NO_CALLERS = (
    "there is no [callers] table: ANY process of your uid may propose actions "
    "(approval still applies)"
)


def _compare(path: Path, old: object, new: object, out: _Said) -> None:
    if old == new:
        return
    for pattern, rule in _RULES:
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


def _added(path: Path, value: object, out: _Said) -> None:
    kind = entity_kind(path)
    if kind in ("ssh host", "http service", "sql database"):
        children = {"ssh host": "commands", "http service": "operations"}.get(kind, "queries")
        names = ", ".join(shown(name) for name in getattr(value, children, {}))
        credential = out.new.credentials.get(str(getattr(value, "credential", "")))
        _say(
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
        _say(out, "loosened", f"an agent may now propose {where(path)}: {argv}")
    elif kind == "http operation":
        call = f"{getattr(value, 'method', '?')} {shown(getattr(value, 'path', ''))}"
        _say(out, "loosened", f"an agent may now propose {where(path)}: {call}")
    elif kind == "credential":
        _say(out, "changed", f"{where(path)} is declared: {credential_words(value)}")
    else:
        _say(out, _unknown(path), f"{where(path)} is added: {shown(value)}")


def _removed(path: Path, value: object, out: _Said) -> None:
    kind = entity_kind(path)
    if kind in ("ssh command", "http operation", "sql query"):
        _say(out, "tightened", f"an agent may no longer propose {where(path)}")
    elif kind in ("ssh host", "http service", "credential", "sql database"):
        _say(out, "tightened", f"{where(path)} is removed")
    else:
        # A query parameter, a header or a param gone can let more through as easily as less.
        _say(out, _unknown(path), f"{where(path)} is removed (was {shown(value)})")


def _list_changed(path: Path, old: list[object], new: list[object], out: _Said) -> None:
    way = direction(path)
    if way != "more":
        # Order counts (an argv): the whole list before and after, in its order.
        _say(out, _unknown(path), f"{where(path)} changes from {shown(old)} to {shown(new)}")
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
    _say(out, weight, f"{where(path)} {'; '.join(parts)}")


def _value_changed(path: Path, old: object, new: object, out: _Said) -> None:
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
    _say(out, weight, f"{where(path)} changes from {shown(old)} to {shown(new)}")


def _unknown(path: Path) -> Weight:
    """A change whose direction no rule computes: loosened, unless the field decides nothing."""
    way: Direction = direction(path)
    return "changed" if way == "words" else "loosened"


def _wider(old: object, new: object) -> bool:
    """Whether the upper bound ``new`` allows more than ``old`` (None: unbounded)."""
    if new is None or old is None:
        return new is None
    return _more(new, old)


def _bound(value: object) -> bool:
    return value is None or _number(value)


def _say(out: _Said, weight: Weight, text: str) -> None:
    out.changes.append(MeaningChange(weight, text))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _more(first: object, second: object) -> bool:
    return float(str(first)) > float(str(second))


# --- the sentences for the fields that decide who may ask for what --------------------------

Rule = Callable[[Path, object, object, "_Said"], bool]


def _callers_table(path: Path, old: object, new: object, out: _Said) -> bool:
    if new is None:
        count = len(getattr(old, "rules", []))
        _say(
            out,
            "loosened",
            "THE [callers] TABLE IS REMOVED: ANY process of your "
            f"uid may now propose actions (before, {count} rule(s) "
            "decided which programs may)",
        )
        return True
    if old is None:
        rules = getattr(new, "rules", [])
        _say(
            out,
            "tightened",
            f"a [callers] table is added: only processes "
            f"matching its {len(rules)} rule(s) may propose actions",
        )
        for rule in rules:
            _say(out, "changed", f"caller rule: {_caller_rule(rule)}")
        return True
    return False


def _caller_rules(path: Path, old: object, new: object, out: _Said) -> bool:
    old_rules = old if isinstance(old, list) else []
    new_rules = new if isinstance(new, list) else []
    for rule in new_rules:
        if rule not in old_rules:
            _say(
                out,
                "loosened",
                "a caller rule is added; processes matching it "
                f"may now propose actions: {_caller_rule(rule)}",
            )
    for rule in old_rules:
        if rule not in new_rules:
            _say(out, "tightened", f"a caller rule is removed: {_caller_rule(rule)}")
    if not new_rules and old_rules:
        _say(out, "tightened", "[callers] rules = []: no process may propose")
    return True


def _caller_rule(rule: object) -> str:
    if not isinstance(rule, CallerRule):
        return shown(rule)
    fields = {name: value for name, value in rule.model_dump().items() if value is not None}
    if not fields:
        return "a rule with no condition (it matches every process)"
    return ", ".join(f"{name} = {shown(value)}" for name, value in fields.items())


def _approval(path: Path, old: object, new: object, out: _Said) -> bool:
    if new == "session":
        text = "one approval now covers every call of a process for its whole session"
        _say(out, "loosened", f"{where(path[:-1])}: {text} (was per call)")
    else:
        text = f"every call now needs its own approval (was {shown(old)})"
        _say(out, "tightened", f"{where(path[:-1])}: {text}")
    return True


def _action_approval(path: Path, old: object, new: object, out: _Said) -> bool:
    """An action's own `approval`: said by what it makes of the calls, its credential's
    approval filling in where the action sets none."""
    before = old or _credential_approval(out.old, path)
    after = new or _credential_approval(out.new, path)
    if before == after:
        _say(out, "changed", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    else:
        _approval(path, before, after, out)
    return True


def _credential_approval(policy: GatewayPolicy, path: Path) -> str:
    """The approval of the credential the table at ``path`` uses (per call when absent)."""
    tables: dict[str, Mapping[str, SshHost | HttpService | SqlDatabase]]
    tables = {"ssh": policy.ssh.hosts, "http": policy.http.services, "sql": policy.sql.databases}
    owner = tables[path[0]].get(path[2])
    credential = policy.credentials.get(owner.credential) if owner is not None else None
    return credential.approval if credential is not None else "per-call"


def _rate_cap(path: Path, old: object, new: object, out: _Said) -> bool:
    place = where(path[:-1])
    if new is None:
        _say(out, "loosened", f"{place}: the rate cap is REMOVED (was {old}/min)")
    elif old is None:
        _say(out, "tightened", f"{place}: calls are now capped at {new}/min")
    else:
        weight: Weight = "loosened" if _more(new, old) else "tightened"
        _say(out, weight, f"{place}: the rate cap changes from {old} to {new}/min")
    return True


def _auto_lock(path: Path, old: object, new: object, out: _Said) -> bool:
    if new == 0:
        _say(out, "loosened", f"the vault no longer locks itself (was after {old} idle minutes)")
    elif old == 0:
        _say(out, "tightened", f"the vault now locks itself after {new} idle minutes")
    else:
        weight: Weight = "loosened" if _more(new, old) else "tightened"
        _say(out, weight, f"auto-lock changes from {old} to {new} idle minutes")
    return True


def _syslog(path: Path, old: object, new: object, out: _Said) -> bool:
    weight: Weight = "loosened" if new == "off" else "changed"
    _say(out, weight, f"signed journal heads go to syslog {shown(new)} (was {shown(old)})")
    return True


def _whole(path: Path, old: object, new: object, out: _Said) -> bool:
    _say(out, "loosened", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    return True


def _credential_used(path: Path, old: object, new: object, out: _Said) -> bool:
    """A host or service moved to another credential: what its calls' approval and rate cap
    become is that credential's, said for the host as if its own fields had changed."""
    _say(out, "loosened", f"{where(path)} changes from {shown(old)} to {shown(new)}")
    before = out.old.credentials.get(str(old))
    after = out.new.credentials.get(str(new))
    if before is None or after is None:
        return True
    if before.approval != after.approval:
        _approval((*path[:-1], "approval"), before.approval, after.approval, out)
    if before.rate_per_minute != after.rate_per_minute:
        _rate_cap((*path[:-1], "rate"), before.rate_per_minute, after.rate_per_minute, out)
    return True


_RULES: tuple[tuple[Path, Rule], ...] = (
    (("callers",), _callers_table),
    (("callers", "rules"), _caller_rules),
    (("credentials", "*", "approval"), _approval),
    (("credentials", "*", "rate_per_minute"), _rate_cap),
    (("ssh", "hosts", "*", "commands", "*", "approval"), _action_approval),
    (("http", "services", "*", "operations", "*", "approval"), _action_approval),
    (("sql", "databases", "*", "queries", "*", "approval"), _action_approval),
    (("gateway", "auto_lock_minutes"), _auto_lock),
    (("gateway", "syslog"), _syslog),
    (("ssh", "hosts", "*", "credential"), _credential_used),
    (("http", "services", "*", "credential"), _credential_used),
    (("sql", "databases", "*", "credential"), _credential_used),
    (("http", "services", "*", "operations", "*", "json_body"), _whole),
)
