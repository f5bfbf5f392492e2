"""What a policy edit means, said in words: the diff of meaning shown beside the text diff.

A text diff shows what the file's characters became; this compares the two *parsed* policies,
so nothing a text can hide from a reader (a table folded into a comment by a character the
terminal breaks at, a key moved elsewhere, a default that applies once a line is gone) changes
what is said here. Every field of the model is compared, so a field added to the schema later
is reported too ("changed from … to …") before anyone writes a sentence for it; the fields that
decide who may ask for what, how often and under which approval get their own sentence and say
whether the edit loosens or tightens. Pure: the CLI renders the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from safeport.errors import ConfigError
from safeport.shared.schemas.config import CallerRule, GatewayPolicy, parse_gateway_policy

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
    accepted: GatewayPolicy | None = None
    if accepted_text is not None:
        try:
            accepted, _ = parse_gateway_policy(accepted_text)
        except ConfigError:
            # Accepted under an older, laxer schema: compare with nothing, so all is listed.
            accepted = None
    return meaning_changes(accepted, proposed)


def meaning_lines(changes: tuple[MeaningChange, ...], *, first: bool) -> list[str]:
    """The changes as `sp policy check` and `accept` print them, under one heading; ``first``:
    nothing was accepted before, so the comparison is with the defaults."""
    against = "the defaults (nothing accepted yet)" if first else "the accepted policy"
    if not changes:
        return [f"what it means, against {against}: no change (only comments, layout or order)"]
    return [f"what it means, against {against}:", *(f"  {c.line()}" for c in changes)]


def meaning_changes(
    accepted: GatewayPolicy | None, proposed: GatewayPolicy
) -> tuple[MeaningChange, ...]:
    """Every difference between two policies, loosening first; None = nothing accepted yet."""
    out: list[MeaningChange] = []
    if accepted is None:
        if proposed.callers is None:
            _say(out, "loosened", _NO_CALLERS)
        accepted = GatewayPolicy()
    _compare((), accepted, proposed, out)
    return tuple(sorted(out, key=lambda change: _ORDER[change.weight]))


_NO_CALLERS = (
    "there is no [callers] table: ANY process of your uid may propose actions "
    "(approval still applies)"
)


def _compare(path: Path, old: object, new: object, out: list[MeaningChange]) -> None:
    if old == new:
        return
    for pattern, rule in _RULES:
        if _matches(pattern, path) and rule(path, old, new, out):
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


def _added(path: Path, value: object, out: list[MeaningChange]) -> None:
    kind = _entity_kind(path)
    if kind == "ssh host":
        commands = ", ".join(_shown(name) for name in getattr(value, "commands", {}))
        _say(
            out,
            "loosened",
            f"{_where(path)} is added ({_target(value)}), commands: {commands or 'none'}",
        )
        for name, command in getattr(value, "commands", {}).items():
            _added((*path, "commands", name), command, out)
    elif kind == "ssh command":
        argv = _shown(getattr(value, "argv", []))
        _say(out, "loosened", f"an agent may now propose {_where(path)}: {argv}")
    elif kind == "http service":
        operations = ", ".join(_shown(name) for name in getattr(value, "operations", {}))
        _say(
            out,
            "loosened",
            f"{_where(path)} is added ({_target(value)}), operations: {operations or 'none'}",
        )
        for name, operation in getattr(value, "operations", {}).items():
            _added((*path, "operations", name), operation, out)
    elif kind == "http operation":
        call = f"{getattr(value, 'method', '?')} {_shown(getattr(value, 'path', ''))}"
        _say(out, "loosened", f"an agent may now propose {_where(path)}: {call}")
    elif kind == "credential":
        _say(out, "changed", f"{_where(path)} is declared: {_credential(value)}")
    else:
        _say(out, "changed", f"{_where(path)} is added: {_shown(value)}")


def _removed(path: Path, value: object, out: list[MeaningChange]) -> None:
    kind = _entity_kind(path)
    if kind in ("ssh command", "http operation"):
        _say(out, "tightened", f"an agent may no longer propose {_where(path)}")
    elif kind in ("ssh host", "http service", "credential"):
        _say(out, "tightened", f"{_where(path)} is removed")
    else:
        _say(out, "changed", f"{_where(path)} is removed (was {_shown(value)})")


def _list_changed(
    path: Path, old: list[object], new: list[object], out: list[MeaningChange]
) -> None:
    gone = [item for item in old if item not in new]
    came = [item for item in new if item not in old]
    parts = []
    if came:
        parts.append(f"adds {_shown(came)}")
    if gone:
        parts.append(f"drops {_shown(gone)}")
    if not parts:
        parts.append(f"changes order: {_shown(old)} -> {_shown(new)}")
    weight: Weight = "changed"
    if path[-1] in _MORE_IS_LOOSER and (came or gone):
        weight = "loosened" if came and not gone else "tightened" if gone and not came else weight
    _say(out, weight, f"{_where(path)} {'; '.join(parts)}")


def _value_changed(path: Path, old: object, new: object, out: list[MeaningChange]) -> None:
    weight: Weight = "changed"
    field = path[-1] if path else ""
    if isinstance(old, bool) and isinstance(new, bool) and field in _TRUE_IS_LOOSER:
        weight = "loosened" if new else "tightened"
    elif _number(old) and _number(new) and field in _BIGGER_IS_LOOSER:
        weight = "loosened" if _more(new, old) else "tightened"
    elif _number(old) and _number(new) and field in _SMALLER_IS_LOOSER:
        weight = "loosened" if _more(old, new) else "tightened"
    _say(out, weight, f"{_where(path)} changes from {_shown(old)} to {_shown(new)}")


def _say(out: list[MeaningChange], weight: Weight, text: str) -> None:
    out.append(MeaningChange(weight, text))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _more(first: object, second: object) -> bool:
    return float(str(first)) > float(str(second))


# Field names whose direction is known wherever they appear.
_TRUE_IS_LOOSER = frozenset({"allow_private_addresses", "allow_approver_in_client"})
_BIGGER_IS_LOOSER = frozenset({
    "max_length", "max", "max_output_bytes", "max_response_bytes", "session_max_minutes",
    "max_connections", "timeout_s", "connect_timeout_s",
})  # fmt: skip
_SMALLER_IS_LOOSER = frozenset({"min"})
_MORE_IS_LOOSER = frozenset({"enum", "allow_leading_dash", "host_keys", "response_fields"})


# --- the sentences for the fields that decide who may ask for what --------------------------

Rule = Callable[[Path, object, object, list[MeaningChange]], bool]


def _callers_table(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
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


def _caller_rules(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
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
        return _shown(rule)
    fields = {name: value for name, value in rule.model_dump().items() if value is not None}
    if not fields:
        return "a rule with no condition (it matches every process)"
    return ", ".join(f"{name} = {_shown(value)}" for name, value in fields.items())


def _approval(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
    if new == "session":
        text = "one approval now covers every call of a process for its whole session"
        _say(out, "loosened", f"{_where(path[:-1])}: {text} (was per call)")
    else:
        text = f"every call now needs its own approval (was {_shown(old)})"
        _say(out, "tightened", f"{_where(path[:-1])}: {text}")
    return True


def _rate_cap(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
    where = _where(path[:-1])
    if new is None:
        _say(out, "loosened", f"{where}: the rate cap is REMOVED (was {old}/min)")
    elif old is None:
        _say(out, "tightened", f"{where}: calls are now capped at {new}/min")
    else:
        weight: Weight = "loosened" if _more(new, old) else "tightened"
        _say(out, weight, f"{where}: the rate cap changes from {old} to {new}/min")
    return True


def _auto_lock(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
    if new == 0:
        _say(out, "loosened", f"the vault no longer locks itself (was after {old} idle minutes)")
    elif old == 0:
        _say(out, "tightened", f"the vault now locks itself after {new} idle minutes")
    else:
        weight: Weight = "loosened" if _more(new, old) else "tightened"
        _say(out, weight, f"auto-lock changes from {old} to {new} idle minutes")
    return True


def _syslog(path: Path, old: object, new: object, out: list[MeaningChange]) -> bool:
    weight: Weight = "loosened" if new == "off" else "changed"
    _say(out, weight, f"signed journal heads go to syslog {_shown(new)} (was {_shown(old)})")
    return True


_RULES: tuple[tuple[Path, Rule], ...] = (
    (("callers",), _callers_table),
    (("callers", "rules"), _caller_rules),
    (("credentials", "*", "approval"), _approval),
    (("credentials", "*", "rate_per_minute"), _rate_cap),
    (("gateway", "auto_lock_minutes"), _auto_lock),
    (("gateway", "syslog"), _syslog),
)


def _matches(pattern: Path, path: Path) -> bool:
    return len(pattern) == len(path) and all(
        p in ("*", q) for p, q in zip(pattern, path, strict=True)
    )


# --- naming what changed -------------------------------------------------------------------


def _entity_kind(path: Path) -> str | None:
    shapes = {
        ("ssh", "hosts", "*"): "ssh host",
        ("ssh", "hosts", "*", "commands", "*"): "ssh command",
        ("http", "services", "*"): "http service",
        ("http", "services", "*", "operations", "*"): "http operation",
        ("credentials", "*"): "credential",
    }
    return next((kind for shape, kind in shapes.items() if _matches(shape, path)), None)


def _where(path: Path) -> str:
    """``path`` in words: the entity it belongs to, then the field inside it."""
    for size in (5, 3, 2):
        kind = _entity_kind(path[:size]) if len(path) >= size else None
        if kind is None:
            continue
        names = path[:size]
        if kind == "ssh command":
            entity = f"command {_shown(names[4])} on ssh host {_shown(names[2])}"
        elif kind == "http operation":
            entity = f"operation {_shown(names[4])} of http service {_shown(names[2])}"
        else:
            entity = f"{kind} {_shown(names[-1])}"
        rest = path[size:]
        return entity + (f" `{_dotted(rest)}`" if rest else "")
    if path and path[0] == "gateway":
        return f"[gateway] `{_dotted(path[1:])}`"
    return f"`{_dotted(path)}`"


def _dotted(path: Path) -> str:
    return ".".join(
        part if part.isascii() and part.isidentifier() else _shown(part) for part in path
    )


def _credential(value: object) -> str:
    kind, approval, cap = (
        getattr(value, name, None) for name in ("kind", "approval", "rate_per_minute")
    )
    scope = "once per session" if approval == "session" else "every call"
    rate = f"at most {cap}/min" if cap is not None else "no rate cap"
    return f"kind {_shown(kind)}, approved {scope}, {rate}"


def _target(value: object) -> str:
    if hasattr(value, "base_url"):
        return _shown(value.base_url)
    user, address, port = (getattr(value, name, "?") for name in ("user", "address", "port"))
    return f"{_shown(f'{user}@{address}:{port}')}"


def _shown(value: object) -> str:
    """A value as JSON with every non-ASCII character escaped, cut at 160 characters: what a
    policy holds is shown exactly, and nothing in it can move or hide the rest of the line."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=True)
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:159] + "~"
