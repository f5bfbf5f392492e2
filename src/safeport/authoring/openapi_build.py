"""Chosen operations of an OpenAPI description as declared gateway operations (pure)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from safeport.authoring.openapi_params import MappedParam, map_schema
from safeport.authoring.openapi_spec import Spec, SpecOperation
from safeport.errors import ConfigError

# A body nested deeper than this is flagged, not followed: the agent fills a flat form.
_MAX_BODY_DEPTH = 2
_READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class ImportedParam:
    name: str  # the gateway's name for it
    source: str  # where the description has it: "path owner", "body title" …
    mapped: MappedParam


@dataclass(frozen=True)
class ImportedOperation:
    """One operation ready to write: the fields of a gateway HttpOperation, and notes."""

    name: str
    operation_id: str
    method: str
    path: str
    description: str
    query: dict[str, str]
    headers: dict[str, str]
    json_body: dict[str, object] | None
    response_fields: list[str]
    params: list[ImportedParam]
    notes: list[str] = field(default_factory=list)  # what was left out, and why

    @property
    def read_only(self) -> bool:
        return self.method in _READ_METHODS

    def flags(self) -> list[str]:
        """Every doubt, one line each, for the terminal."""
        found = [f"{p.source} (`{p.name}`): {flag}" for p in self.params for flag in p.mapped.flags]
        return found + self.notes


def operation_name(operation_id: str) -> str:
    """A gateway operation name for an operationId (`issues/create` → `issues_create`)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", operation_id).strip("_-")[:64]
    return name or "operation"


def param_name(raw: str) -> str:
    """A gateway param name for a description's name (`X-Request-Id` → `x_request_id`)."""
    name = re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_")
    if not name or not name[0].isalpha():
        name = f"p_{name}"
    return name[:64]


class _Names:
    """Gateway names handed out in one operation, each once."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def give(self, raw: str, where: str) -> str:
        name = param_name(raw)
        if name in self.taken:
            name = param_name(f"{where}_{raw}")
        base, n = name, 2
        while name in self.taken:
            name = f"{base[:60]}_{n}"
            n += 1
        self.taken.add(name)
        return name


def build_operation(spec: Spec, op: SpecOperation, *, optional: bool) -> ImportedOperation:
    names = _Names()
    params: list[ImportedParam] = []
    notes: list[str] = []
    skipped: list[str] = []
    path = op.path
    query: dict[str, str] = {}
    headers: dict[str, str] = {}
    for param in op.parameters:
        raw, where = str(param["name"]), str(param.get("in"))
        required = bool(param.get("required")) or where == "path"
        schema = spec.resolve(param.get("schema") or {})
        if where in ("header", "cookie"):
            _header_or_cookie(raw, where, required, schema, headers, notes)
            continue
        if where not in ("path", "query"):
            continue
        if not required and not optional:
            skipped.append(raw)
            continue
        name = names.give(raw, where)
        mapped = map_schema(schema, "path" if where == "path" else "query", spec.resolve)
        params.append(ImportedParam(name, f"{where} {raw}", mapped))
        if where == "path":
            path = path.replace("{" + raw + "}", "{" + name + "}")
        else:
            query[raw] = "{" + name + "}"
    body: dict[str, object] | None = None
    if op.body_schema is not None:
        body, body_params = _body(spec, op.body_schema, names, optional, skipped, notes, "", 0)
        params += body_params
    elif op.other_body_types:
        notes.append(
            "the request body is not JSON (" + ", ".join(op.other_body_types) + "): not imported"
        )
    if skipped:
        notes.append(
            "optional, not imported: " + ", ".join(skipped) + " (--optional imports them; "
            "the gateway then asks for every one)"
        )
    _refuse_undeclared_placeholders(op, path, params)
    return ImportedOperation(
        name=operation_name(op.operation_id),
        operation_id=op.operation_id,
        method=op.method,
        path=path,
        description=_one_line(op.summary),
        query=query,
        headers=headers,
        json_body=body,
        response_fields=_response_fields(spec, op, notes),
        params=params,
        notes=notes,
    )


def _header_or_cookie(
    raw: str,
    where: str,
    required: bool,
    schema: Mapping[str, Any],
    headers: dict[str, str],
    notes: list[str],
) -> None:
    """A header or cookie never becomes a parameter the caller fills: a required header with one
    fixed value is sent as the description fixes it, anything else required is left to a person."""
    fixed = _fixed_value(schema)
    if required and fixed is not None and where == "header":
        headers[raw] = fixed
        # A fixed header can change what a call does (`X-HTTP-Method-Override`
        # makes a GET delete): the description chose it, a person keeps it.
        notes.append(f"header {raw!r} is sent as {fixed!r} on every call: check it")
    elif required:
        notes.append(f"{where} parameter {raw!r} is required but not imported: set it")


def _refuse_undeclared_placeholders(
    op: SpecOperation, path: str, params: list[ImportedParam]
) -> None:
    """A ``{placeholder}`` no parameter fills would be sent literally: the import stops instead."""
    leftover = set(re.findall(r"\{([^}]*)\}", path)) - {p.name for p in params}
    if leftover:
        raise ConfigError(
            f"operation {op.operation_id!r}: the path has placeholders no parameter declares: "
            f"{sorted(leftover)}"
        )


def _body(
    spec: Spec,
    schema: Mapping[str, Any],
    names: _Names,
    optional: bool,
    skipped: list[str],
    notes: list[str],
    prefix: str,
    depth: int,
) -> tuple[dict[str, object], list[ImportedParam]]:
    """A body template with a placeholder per property, and the params they name."""
    node = _merged(spec, schema)
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        notes.append(f"body {prefix or 'root'}: not an object with properties; not imported")
        return {}, []
    required = set(node.get("required") or [])
    template: dict[str, object] = {}
    params: list[ImportedParam] = []
    for key, raw_schema in properties.items():
        prop = _merged(spec, spec.resolve(raw_schema))
        label = f"{prefix}{key}"
        if prop.get("readOnly"):
            continue
        if key not in required and not optional:
            skipped.append(label)
            continue
        if prop.get("type") == "object" or (
            "properties" in prop and prop.get("type") in (None, "object")
        ):
            if depth + 1 > _MAX_BODY_DEPTH or not isinstance(prop.get("properties"), Mapping):
                notes.append(f"body {label}: a nested object; not imported, add it by hand")
                continue
            notes.append(f"body {label}: a nested object; only its fields below are sent")
            inner, more = _body(spec, prop, names, optional, skipped, notes, f"{label}.", depth + 1)
            template[str(key)] = inner
            params += more
            continue
        name = names.give(label.replace(".", "_"), "body")
        mapped = map_schema(prop, "body", spec.resolve)
        params.append(ImportedParam(name, f"body {label}", mapped))
        is_array = prop.get("type") == "array" or ("items" in prop and "type" not in prop)
        placeholder = "{" + name + "}"
        template[str(key)] = [placeholder] if is_array else placeholder
    return template, params


def _merged(spec: Spec, schema: object) -> Mapping[str, Any]:
    """An object schema with its `allOf` parts' properties and requirements merged."""
    node = spec.resolve(schema)
    if not isinstance(node, Mapping):
        return {}
    if not isinstance(node.get("allOf"), list):
        return node
    properties: dict[str, Any] = {}
    required: list[str] = []
    merged: dict[str, Any] = {}
    for part in [*node["allOf"], {k: v for k, v in node.items() if k != "allOf"}]:
        inner = _merged(spec, part)
        merged.update(inner)
        properties.update(inner.get("properties") or {})
        required += list(inner.get("required") or [])
    if properties:
        merged["properties"] = properties
    merged["required"] = required
    return merged


def _fixed_value(schema: object) -> str | None:
    """The one value a header can have: its const, single enum value or default."""
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("const"), str):
        return str(schema["const"])
    values = schema.get("enum")
    if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str):
        return values[0]
    return str(schema["default"]) if isinstance(schema.get("default"), str) else None


def _response_fields(spec: Spec, op: SpecOperation, notes: list[str]) -> list[str]:
    """The success answer's required top-level scalar fields: the gateway returns only
    declared fields, and refuses an answer missing one, so only required ones are named."""
    schema = op.success_schema
    if schema is None:
        return []
    node = _merged(spec, schema)
    if node.get("type") == "array" or "items" in node:
        notes.append(
            "the answer is a list: no response_fields declared (only the status comes back); "
            "add item fields such as `0.id` by hand"
        )
        return []
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        return []
    fields = []
    for key in node.get("required") or []:
        prop = _merged(spec, properties.get(key))
        if prop.get("type") in ("string", "integer", "number", "boolean") and not prop.get(
            "writeOnly"
        ):
            fields.append(str(key))
    return fields


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:199] + "…"
