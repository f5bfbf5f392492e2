"""`sp policy remove KIND NAME`: one declared entry taken out of gateway.toml, every other line
(comments, blank lines, order, spelling) left exactly as it was.

The entry's tables are cut line by line, each from its header to its last key, so the comments
that introduce what follows stay. The cut is kept only if the text it leaves parses to exactly
the policy before it less that one entry, and is still a valid policy; an entry written another
way (a dotted key or an inline table inside its parent) is refused with what to do, never
half-removed. Nothing here writes: the caller writes the text this returns.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.text_lines import split_lines

EntryKind = Literal["credential", "ssh", "command", "http", "operation", "sql", "query"]

# kind: (the tables' path, "" or the key of its children, the words a person reads)
_PLACES: dict[EntryKind, tuple[tuple[str, ...], str, str]] = {
    "credential": (("credentials",), "", "credential"),
    "ssh": (("ssh", "hosts"), "", "ssh host"),
    "command": (("ssh", "hosts"), "commands", "command"),
    "http": (("http", "services"), "", "https service"),
    "operation": (("http", "services"), "operations", "operation"),
    "sql": (("sql", "databases"), "", "database"),
    "query": (("sql", "databases"), "queries", "query"),
}
ENTRY_KINDS: tuple[EntryKind, ...] = tuple(_PLACES)
_PARENTS: dict[EntryKind, EntryKind] = {"command": "ssh", "operation": "http", "query": "sql"}
_FORMS = {"command": "HOST/COMMAND", "operation": "SERVICE/OPERATION", "query": "DATABASE/QUERY"}
# What names a credential: hosts, services and databases each have one.
_USERS: tuple[tuple[str, str, EntryKind], ...] = (
    ("ssh", "hosts", "ssh"), ("http", "services", "http"), ("sql", "databases", "sql"),
)  # fmt: skip


@dataclass(frozen=True)
class Removal:
    text: str
    what: str  # the entry in words: `ssh host "staging"`
    unused_credential: str | None = None  # a credential nothing names any more


def remove_entry(text: str, kind: EntryKind, name: str) -> Removal:
    """``text`` without the entry ``name`` of ``kind`` (PARENT/NAME for a command, an operation
    or a query); raises :class:`ConfigError` when it is not declared or cannot be cut cleanly."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"gateway.toml is not valid TOML: {exc}", hint="fix it first") from None
    path, what = _entry_path(data, kind, name)
    if kind == "credential":
        _refuse_if_used(data, name)
    updated = _cut(text, path)
    expected = copy.deepcopy(data)
    _drop(expected, path)
    try:
        left = tomllib.loads(updated)
    except tomllib.TOMLDecodeError:
        left = None
    if left is None or _pruned(left, path) != _pruned(expected, path):
        raise ConfigError(
            f"cannot remove {what} line by line: it is not written as [tables] of its own",
            hint="take it out by hand with `sp policy edit`",
        )
    parse_gateway_policy(updated)  # still a policy: raises naming the key, nothing is written
    return Removal(updated, what, _newly_unused(data, left, path))


def _entry_path(data: Mapping[str, Any], kind: EntryKind, name: str) -> tuple[list[str], str]:
    base, children, words = _PLACES[kind]
    if children:
        parent, slash, child = name.partition("/")
        if not slash or not parent or not child:
            raise ConfigError(f"name a {words} as {_FORMS[kind]}, not {_quoted(name)}")
        path = [*base, parent, children, child]
        what = f"{words} {_quoted(child)} of {_PLACES[_PARENTS[kind]][2]} {_quoted(parent)}"
    else:
        path, what = [*base, name], f"{words} {_quoted(name)}"
    table = _at(data, path[:-1])
    if not isinstance(table, dict) or path[-1] not in table:
        declared = sorted(table) if isinstance(table, dict) else []
        known = ", ".join(map(_quoted, declared)) if declared else "none"
        raise ConfigError(f"gateway.toml declares no {what}", hint=f"declared here: {known}")
    return path, what


def _refuse_if_used(data: Mapping[str, Any], credential: str) -> None:
    for section, table, kind in _USERS:
        for entry, body in sorted(_table(data, [section, table]).items()):
            if isinstance(body, dict) and body.get("credential") == credential:
                words = _PLACES[kind][2]
                raise ConfigError(
                    f"credential {_quoted(credential)} is used by {words} {_quoted(entry)}",
                    hint=f"remove that first: `sp policy remove {kind} {entry}`",
                )


def _newly_unused(
    before: Mapping[str, Any], after: Mapping[str, Any], path: list[str]
) -> str | None:
    gone = _at(before, path)
    credential = gone.get("credential") if isinstance(gone, dict) else None
    if not isinstance(credential, str) or credential not in _at(after, ["credentials"]):
        return None
    for section, table, _ in _USERS:
        for body in _table(after, [section, table]).values():
            if isinstance(body, dict) and body.get("credential") == credential:
                return None
    return credential


def _cut(text: str, path: list[str]) -> str:
    """Every table at or under ``path``, from its header through its last key line."""
    lines = split_lines(text, keepends=True)
    headers = [(number, _header_path(line)) for number, line in enumerate(lines)]
    starts = [number for number, found in headers if found is not None]
    drop: set[int] = set()
    for index, start in enumerate(starts):
        found = headers[start][1]
        if found is None or found[: len(path)] != path:
            continue
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        # The comments and blank lines after its last key introduce what follows: they stay.
        while end > start + 1 and _is_blank_or_comment(lines[end - 1]):
            end -= 1
        drop.update(range(start, end))
        # One blank line closes the gap the table leaves, not two.
        gap_above = start == 0 or not lines[start - 1].strip()
        if gap_above and end < len(lines) and not lines[end].strip():
            drop.add(end)
    kept = "".join(line for number, line in enumerate(lines) if number not in drop)
    # A cut at the end leaves the blank lines that stood before it: the file ends as it did.
    return kept.rstrip("\n") + "\n" if text.endswith("\n") and kept.strip() else kept


def _quoted(name: str) -> str:
    """A name as the messages show it: quoted, any control or non-ASCII character escaped."""
    return json.dumps(name)


def _header_path(line: str) -> list[str] | None:
    """The key path of a `[table]` header line (quoted keys read as TOML reads them)."""
    # An array of tables' header (`[[callers.rules]]`) bounds a table too, and is one of the
    # entry's own when its path is under the entry's.
    if not line.lstrip().startswith("["):
        return None
    try:
        parsed: Any = tomllib.loads(line)
    except tomllib.TOMLDecodeError:
        return None  # a line of a multi-line value that happens to start with "["
    path = []
    while isinstance(parsed, dict) and len(parsed) == 1:
        key = next(iter(parsed))
        path.append(key)
        parsed = parsed[key]
    return path


def _is_blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _at(data: Mapping[str, Any], path: list[str]) -> Any:
    for key in path:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data


def _table(data: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    """The table at ``path``; empty when a value other than a table stands there (`hosts = 3`,
    which `sp policy check` names)."""
    found = _at(data, path)
    return found if isinstance(found, dict) else {}


def _drop(data: dict[str, Any], path: list[str]) -> None:
    del _at(data, path[:-1])[path[-1]]


def _pruned(data: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """``data`` less the ancestors of ``path`` left empty (`[ssh]` once its last host is gone)."""
    data = copy.deepcopy(data)
    for depth in range(len(path) - 1, 0, -1):
        parent = _at(data, path[: depth - 1])
        if isinstance(parent, dict) and parent.get(path[depth - 1]) == {}:
            del parent[path[depth - 1]]
    return data
