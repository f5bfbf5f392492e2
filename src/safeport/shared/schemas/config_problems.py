"""A validation problem of gateway.toml said in the policy's own words.

Pydantic reports a location and its own sentence; the author of gateway.toml needs the key, the
line it is on and, for a key the schema does not know, the nearest key it does ("did you mean
`json_body`?"): a misspelt key is the commonest first-day mistake, and the list of keys allowed
at that place is otherwise only in the source.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Sequence
from typing import Annotated, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from safeport.shared.text_lines import split_lines


def describe_problem(exc: ValidationError, text: str, root: type[BaseModel]) -> str:
    """The first problem in the words of gateway.toml: the key, its line, what is wrong."""
    first = exc.errors()[0]
    loc = [str(part) for part in first["loc"]]
    message = _plain_message(first["type"], str(first["msg"]), first.get("ctx") or {})
    line = _line_of(text, loc) if loc else _line_of_names(text, message)
    at = f" line {line}" if line else ""
    if first["type"] == "extra_forbidden":
        return f"gateway.toml{at}: unknown key `{'.'.join(loc)}`{_nearest(root, loc)}"
    if not loc:
        return f"gateway.toml{at}: {message}"
    joiner = ": " if first["type"] == "value_error" else " "
    return f"gateway.toml{at}: `{'.'.join(loc)}`{joiner}{message}"


def allowed_keys(root: type[BaseModel], loc: Sequence[str]) -> tuple[str, ...]:
    """The keys the table at ``loc`` may hold: empty when ``loc`` names no table of the schema.
    Author-chosen names (a host's, a param's) and list positions are stepped over."""
    node: object = root
    for part in loc:
        node = _step(node, part)
        if node is None:
            return ()
    model = _model_of(node)
    return tuple(model.model_fields) if model is not None else ()


def _nearest(root: type[BaseModel], loc: list[str]) -> str:
    allowed = allowed_keys(root, loc[:-1])
    if not allowed:
        return ""
    close = difflib.get_close_matches(loc[-1], allowed, n=1, cutoff=0.6)
    if not close:
        # A substring says more than the edit distance: `body` is in `json_body`.
        close = [key for key in allowed if loc[-1].lower() in key or key in loc[-1].lower()][:1]
    if close:
        return f"; did you mean `{close[0]}`?"
    return "; keys allowed here: " + ", ".join(f"`{key}`" for key in allowed)


def _step(node: object, part: str) -> object | None:
    """The annotation one location part below ``node`` (a field, a dict value, a list item)."""
    for option in _options(node):
        model = _model_of(option)
        if model is not None:
            field = model.model_fields.get(part)
            if field is not None:
                return field.annotation
            continue
        origin = get_origin(option)
        if origin is dict:
            value: object = get_args(option)[1]
            return value
        if origin is list and part.isdigit():
            item: object = get_args(option)[0]
            return item
    return None


def _options(node: object) -> list[object]:
    """``node`` without ``Annotated`` metadata, a union split into its members (None dropped)."""
    while get_origin(node) is Annotated:
        node = get_args(node)[0]
    if get_origin(node) in (Union, types.UnionType):
        return [
            option for arg in get_args(node) if arg is not type(None) for option in _options(arg)
        ]
    return [node]


def _model_of(node: object) -> type[BaseModel] | None:
    for option in _options(node):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _plain_message(kind: str, message: str, ctx: dict[str, object]) -> str:
    """Pydantic's sentence without pydantic's wording ("Value error, ", "Input should be")."""
    if kind == "missing":
        return "is required"
    if kind == "string_pattern_mismatch":
        return f"does not have the allowed form (it must match {ctx.get('pattern')})"
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if message.startswith("Input should be"):
        return "should be" + message.removeprefix("Input should be")
    return message


def _line_of(text: str, loc: list[str]) -> int | None:
    """Best-effort line of the key named by ``loc`` (TOML parsers keep no positions): the
    longest table header on its path, then the first line below it naming its last key."""
    keys = [key for key in loc if not key.isdigit()]
    if not keys:
        return None
    lines = split_lines(text)  # as TOML counts them, so the line named is the parser's
    start: int | None = None
    for size in range(len(keys), 0, -1):
        dotted = r"\s*\.\s*".join(rf'"?{re.escape(key)}"?' for key in keys[:size])
        header = re.compile(rf"^\s*\[\s*{dotted}\s*\]")
        hit = next((n for n, line in enumerate(lines) if header.match(line)), None)
        if hit is not None:
            if size == len(keys):
                return hit + 1
            start = hit
            break
    key = re.compile(rf'(?:^|[\s.{{,])"?{re.escape(keys[-1])}"?\s*(?:=|\.)')
    for number in range(start or 0, len(lines)):
        if key.search(lines[number]):
            return number + 1
    return None if start is None else start + 1  # a missing key: the table that lacks it


def _line_of_names(text: str, message: str) -> int | None:
    """For a problem across tables (an undeclared credential): the line holding the last
    quoted name the message mentions, as a value or a table name."""
    for name in reversed(re.findall(r"'([^']+)'", message)):
        pattern = re.compile(rf'=\s*"{re.escape(name)}"|\.{re.escape(name)}\s*\]')
        for number, line in enumerate(split_lines(text), start=1):
            if pattern.search(line):
                return number
    return None
