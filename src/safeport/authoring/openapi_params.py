"""One OpenAPI schema to one param constraint (pure; no I/O).

A gateway param takes exactly one constraint (a full-match pattern, an enum, or an integer
range), and every value is checked against it before a card is shown. Where the description
says enough, the constraint is the description's own; where it says nothing that bounds a
value (a free string, a number, a choice of forms), the constraint is a conservative stand-in
and the mapping says so in ``flags``, which the import writes beside the param for a person
to review. Nothing is left silently unbounded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from safeport.shared.schemas.config_params import ParamSpec

Where = Literal["path", "query", "header", "body"]
Resolve = Callable[[object], Any]

MAX_LENGTH = 4096  # ParamSpec's own ceiling
FREE_TEXT_LENGTH = 256
# A path segment the description leaves open: the characters names and ids are made of.
# (`/` could not leave the segment anyway, it is escaped; this keeps the card readable.)
FREE_SEGMENT = r"[A-Za-z0-9._~-]+"
FREE_SEGMENT_LENGTH = 100
FREE_TEXT = ".*"
# What a `format` means when the description gives no pattern.
FORMATS: dict[str, tuple[str, int]] = {
    "date-time": (
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
        r"(Z|[+-][0-9]{2}:[0-9]{2})",
        40,
    ),
    "date": (r"[0-9]{4}-[0-9]{2}-[0-9]{2}", 10),
    "time": (r"[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})?", 30),
    "uuid": (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", 36),
    "email": (r"[^@\s]{1,64}@[A-Za-z0-9.-]{1,253}", 320),
    "hostname": (r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?", 253),
    "ipv4": (r"[0-9]{1,3}(\.[0-9]{1,3}){3}", 15),
    "uri": (r"https?://[^\s]+", 2048),
    "url": (r"https?://[^\s]+", 2048),
    "int32": (r"[0-9]{1,10}", 10),
    "int64": (r"[0-9]{1,19}", 19),
}


@dataclass(frozen=True)
class MappedParam:
    """The constraint for one value and, in words, what the description left open."""

    spec: ParamSpec
    flags: tuple[str, ...] = ()


def map_schema(schema: object, where: Where, resolve: Resolve = lambda node: node) -> MappedParam:
    """The param constraint for a value of ``schema`` sent in ``where``."""
    node, flags = _one_form(resolve(schema), resolve)
    if "const" in node:
        return _with(_enum([node["const"]], node, where), flags)
    if isinstance(node.get("enum"), list) and [v for v in node["enum"] if v is not None]:
        return _with(_enum(node["enum"], node, where), flags)
    kind = _type_of(node)
    if kind == "integer":
        return _with(_integer(node), flags)
    if kind == "number":
        flag = "a number: taken as decimal text of up to 31 characters"
        if where == "body":
            flag += " (sent in the body as a JSON string)"
        spec = ParamSpec(pattern=r"[0-9]{1,15}(\.[0-9]{1,15})?", max_length=31)
        return MappedParam(spec, (*flags, flag))
    if kind == "boolean":
        spec = ParamSpec(enum=["true", "false"], max_length=5)
        body = ("a boolean: sent in the body as the JSON string 'true' or 'false'",)
        return MappedParam(spec, (*flags, *(body if where == "body" else ())))
    if kind == "array":
        inner = map_schema(node.get("items") or {}, where, resolve)
        return _with(inner, (*flags, "an array: exactly one item is sent"))
    if kind == "object":
        flags = (*flags, "an object: sent as text")
        return _with(_free_string(where), flags)
    return _with(_string(node, where), flags)


def _with(mapped: MappedParam, flags: tuple[str, ...]) -> MappedParam:
    return MappedParam(mapped.spec, (*flags, *mapped.flags))


def _one_form(node: object, resolve: Resolve) -> tuple[Mapping[str, Any], tuple[str, ...]]:
    """The schema as one form: `allOf` merged, `oneOf`/`anyOf` narrowed to its first bounded
    scalar form (flagged), `null` dropped (a param always has a value)."""
    if not isinstance(node, Mapping):
        return {}, ()
    flags: tuple[str, ...] = ()
    if isinstance(node.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            inner, more = _one_form(resolve(part), resolve)
            merged = {**inner, **merged}
            flags += more
        node = merged
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            forms = [resolve(form) for form in node[key]]
            forms = [f for f in forms if isinstance(f, Mapping) and _type_of(f) != "null"]
            if len(forms) > 1:
                order = ["string", "integer", "boolean", "number", "array", "object", None]
                chosen = min(forms, key=lambda f: order.index(_type_of(f)))
                flags += (f"{key}: only the {_type_of(chosen) or 'first'} form is accepted",)
                forms = [chosen]
            rest = {k: v for k, v in node.items() if k != key}
            inner, more = _one_form(forms[0] if forms else {}, resolve)
            return {**inner, **rest}, flags + more
    types = node.get("type")
    if isinstance(types, list):
        kept = [t for t in types if t != "null"]
        if len(kept) > 1:
            flags += (f"one of {'/'.join(map(str, kept))}: only the {kept[0]} form is accepted",)
        node = {**node, "type": kept[0] if kept else "string"}
    return node, flags


def _type_of(node: Mapping[str, Any]) -> str | None:
    kind = node.get("type")
    if isinstance(kind, str):
        return kind
    if "properties" in node:
        return "object"
    if "items" in node:
        return "array"
    return None


def _enum(values: list[object], node: Mapping[str, Any], where: Where) -> MappedParam:
    kept = [v for v in values if v is not None]
    if kept and all(isinstance(v, int) and not isinstance(v, bool) for v in kept):
        ints = [int(str(v)) for v in kept]
        if len(ints) == max(ints) - min(ints) + 1 or where != "body":
            # Sent as a number: the enum becomes the range it spans (exactly, when it is one).
            flags = (
                ()
                if len(ints) == max(ints) - min(ints) + 1
                else (f"integers {sorted(ints)}: any integer from {min(ints)} to {max(ints)}",)
            )
            return MappedParam(ParamSpec(type="int", min=min(ints), max=max(ints)), flags)
    texts = [_text(v) for v in kept]
    length = max(1, min(MAX_LENGTH, max(len(t) for t in texts)))
    flags = ()
    if where == "body" and not all(isinstance(v, str) for v in kept):
        flags = ("an enum of non-strings: sent in the body as a JSON string",)
    return MappedParam(ParamSpec(enum=list(dict.fromkeys(texts)), max_length=length), flags)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _integer(node: Mapping[str, Any]) -> MappedParam:
    low = _bound(node, "minimum", "exclusiveMinimum", +1)
    high = _bound(node, "maximum", "exclusiveMaximum", -1)
    flags: list[str] = []
    if low is None or low < 0:
        # The gateway refuses a value starting with '-' in a URL or body it builds.
        low = 0
    if high is None:
        flags.append("no maximum in the description: any integer from the minimum up")
    elif high < low:
        high = low
        flags.append("its only allowed values are negative: narrowed to 0")
    return MappedParam(ParamSpec(type="int", min=low, max=high), tuple(flags))


def _bound(node: Mapping[str, Any], key: str, exclusive: str, step: int) -> int | None:
    value = node.get(key)
    excl = node.get(exclusive)
    if isinstance(excl, (int, float)) and not isinstance(excl, bool):  # OpenAPI 3.1
        value, excl = excl, True
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None  # no bound said (an infinite or NaN one says nothing either)
    bound = math.ceil(value) if step > 0 else math.floor(value)
    return bound + step if excl is True and bound == value else bound


def _string(node: Mapping[str, Any], where: Where) -> MappedParam:
    max_len = node.get("maxLength")
    min_len = node.get("minLength")
    length = max_len if isinstance(max_len, int) and max_len >= 1 else None
    flags: list[str] = []
    if length is not None and length > MAX_LENGTH:
        flags.append(f"maxLength {length} is above the gateway's {MAX_LENGTH}: cut to it")
        length = MAX_LENGTH
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        converted = _full_match(pattern)
        if converted is not None:
            return MappedParam(
                ParamSpec(pattern=converted, max_length=length or FREE_TEXT_LENGTH), tuple(flags)
            )
        flags.append(f"its pattern {pattern!r} is not a Python regular expression: ignored")
    form = node.get("format")
    if isinstance(form, str) and form in FORMATS:
        regex, form_length = FORMATS[form]
        spec = ParamSpec(pattern=regex, max_length=min(length or form_length, form_length))
        return MappedParam(spec, tuple(flags))
    if length is not None:
        low = min_len if isinstance(min_len, int) and 0 < min_len <= length else 0
        text = rf".{{{low},}}" if low else FREE_TEXT
        return MappedParam(ParamSpec(pattern=text, max_length=length), tuple(flags))
    free = _free_string(where)
    return MappedParam(free.spec, (*flags, *free.flags))


def _free_string(where: Where) -> MappedParam:
    if where == "path":
        return MappedParam(
            ParamSpec(pattern=FREE_SEGMENT, max_length=FREE_SEGMENT_LENGTH),
            (
                "no pattern or length in the description: letters, digits and . _ ~ - "
                f"up to {FREE_SEGMENT_LENGTH} characters",
            ),
        )
    return MappedParam(
        ParamSpec(pattern=FREE_TEXT, max_length=FREE_TEXT_LENGTH),
        (f"no pattern or length in the description: any text up to {FREE_TEXT_LENGTH} characters",),
    )


def _full_match(pattern: str) -> str | None:
    """The description's pattern for a full match, or None if Python cannot compile it.

    JSON Schema patterns search (match anywhere); the gateway matches the whole value, which
    only narrows what passes. A leading `^` and trailing `$` are dropped as redundant.
    """
    text = pattern
    if text.startswith("^"):
        text = text[1:]
    if text.endswith("$") and not text.endswith("\\$"):
        text = text[:-1]
    try:
        re.compile(text)
    except re.error:
        return None
    return text
