"""How the diff of meaning names a place in the policy and shows a value (pure).

Values are JSON with every non-ASCII character escaped, and whole: nothing in a value can move
or hide the rest of its line, and two values that differ only past some length never read
alike (the text diff shows them whole too).
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from safeport.shared.schemas.config import Credential, SqlDatabase

Path = tuple[str, ...]


def entity_kind(path: Path) -> str | None:
    shapes = {
        ("ssh", "hosts", "*"): "ssh host",
        ("ssh", "hosts", "*", "commands", "*"): "ssh command",
        ("http", "services", "*"): "http service",
        ("http", "services", "*", "operations", "*"): "http operation",
        ("credentials", "*"): "credential",
        ("sql", "databases", "*"): "sql database",
        ("sql", "databases", "*", "queries", "*"): "sql query",
    }
    return next((kind for shape, kind in shapes.items() if matches(shape, path)), None)


def where(path: Path) -> str:
    """``path`` in words: the entity it belongs to, then the field inside it."""
    for size in (5, 3, 2):
        kind = entity_kind(path[:size]) if len(path) >= size else None
        if kind is None:
            continue
        names = path[:size]
        if kind == "ssh command":
            entity = f"command {shown(names[4])} on ssh host {shown(names[2])}"
        elif kind == "http operation":
            entity = f"operation {shown(names[4])} of http service {shown(names[2])}"
        elif kind == "sql query":
            entity = f"query {shown(names[4])} of sql database {shown(names[2])}"
        else:
            entity = f"{kind} {shown(names[-1])}"
        rest = path[size:]
        return entity + (f" `{dotted(rest)}`" if rest else "")
    if path and path[0] == "gateway":
        return f"[gateway] `{dotted(path[1:])}`"
    return f"`{dotted(path)}`"


def dotted(path: Path) -> str:
    return ".".join(
        part if part.isascii() and part.isidentifier() else shown(part) for part in path
    )


def credential_words(value: object) -> str:
    if not isinstance(value, Credential):
        return "not declared"
    scope = "once per session" if value.approval == "session" else "every call"
    cap = value.rate_per_minute
    rate = f"at most {cap}/min" if cap is not None else "no rate cap"
    return f"kind {shown(value.kind)}, approved {scope}, {rate}"


def target(value: object) -> str:
    if hasattr(value, "base_url"):
        return shown(value.base_url)
    if isinstance(value, SqlDatabase):
        return shown(f"{value.user}@{value.host}:{value.port}/{value.database}")
    user, address, port = (getattr(value, name, "?") for name in ("user", "address", "port"))
    return f"{shown(f'{user}@{address}:{port}')}"


def shown(value: object) -> str:
    """A value as JSON with every non-ASCII character escaped, and whole: what a policy holds
    is shown exactly, nothing in it can move or hide the rest of the line, and two values that
    differ only past some length never read alike (the text diff shows them whole too)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=True)
    return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)


def matches(pattern: Path, path: Path) -> bool:
    return len(pattern) == len(path) and all(
        p in ("*", q) for p, q in zip(pattern, path, strict=True)
    )
