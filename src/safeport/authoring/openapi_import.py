"""`sp policy import openapi`: chosen operations of an OpenAPI 3 description as gateway.toml text.

The text is what a person would write: one table per operation, the request as templates with
`{param}` placeholders, and one constraint per param, each doubt written beside what it is
about (``# REVIEW:``) and said again on the terminal. The result is added to the policy only
if the whole file still parses; accepting it stays `sp policy accept`'s.
"""

from __future__ import annotations

import json
import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from safeport.authoring.openapi_build import ImportedOperation, build_operation
from safeport.authoring.openapi_spec import Spec, load_spec
from safeport.errors import ConfigError
from safeport.shared.schemas.config import parse_gateway_policy
from safeport.shared.schemas.config_params import ParamSpec

__all__ = ["ImportChoice", "ImportResult", "import_openapi", "load_spec", "write_into"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class ImportChoice:
    operation_ids: tuple[str, ...]
    service: str | None = None
    credential: str | None = None
    base_url: str | None = None
    optional: bool = False


@dataclass(frozen=True)
class ImportResult:
    text: str  # what to add to the policy file, complete tables only
    service: str
    operations: tuple[ImportedOperation, ...]

    def warnings(self) -> list[str]:
        return [f"{op.name}: {flag}" for op in self.operations for flag in op.flags()]


def import_openapi(spec: Spec, choice: ImportChoice, policy_text: str | None) -> ImportResult:
    """The text to add to ``policy_text`` (the current file, or None when there is none)."""
    existing: Mapping[str, Any] = _loads(policy_text) if policy_text else {}
    base_url = _base_url(spec, choice.base_url)
    service = choice.service or _service_name(base_url)
    credential = choice.credential or service
    declared = existing.get("http", {}).get("services", {}).get(service)
    operations = _unique_names(
        build_operation(spec, spec.operation(op_id), optional=choice.optional)
        for op_id in dict.fromkeys(choice.operation_ids)
    )
    names = [op.name for op in operations]
    if declared is not None:
        if choice.base_url is not None and declared.get("base_url") != base_url:
            raise ConfigError(
                f"service {service!r} is already declared with base_url "
                f"{declared.get('base_url')!r}",
                hint="choose another --service, or leave out --base-url",
            )
        taken = sorted(set(names) & set(declared.get("operations", {})))
        if taken:
            raise ConfigError(
                f"service {service!r} already declares {', '.join(map(repr, taken))}",
                hint="remove them from gateway.toml first, or import into another --service",
            )
    blocks: list[str] = []
    if credential not in existing.get("credentials", {}):
        blocks.append(
            f"[credentials.{_key(credential)}]\n"
            "# store it with `sp vault add` under this name; reads and writes ask per call\n"
            'kind = "token"\n'
        )
    if declared is None:
        blocks.append(
            f"[http.services.{_key(service)}]\n"
            f"base_url = {_string(base_url)}\n"
            f"credential = {_string(credential)}\n"
        )
    blocks += [_operation_text(service, op) for op in operations]
    text = "\n".join(blocks)
    result = ImportResult(text=text, service=service, operations=operations)
    combined = appended(policy_text, text) if policy_text else text
    parse_gateway_policy(combined)  # a fragment that would break the file is never offered
    return result


def _unique_names(operations: Iterable[ImportedOperation]) -> tuple[ImportedOperation, ...]:
    """Two operationIds can map to one name (`a/b` and `a_b`, or a long shared prefix)."""
    named: list[ImportedOperation] = []
    taken: set[str] = set()
    for op in operations:
        name, n = op.name, 2
        while name in taken:
            name = f"{op.name[:60]}-{n}"
            n += 1
        taken.add(name)
        named.append(replace(op, name=name))
    return tuple(named)


def appended(policy_text: str, fragment: str) -> str:
    """The policy file with ``fragment`` added at its end, one blank line between."""
    return policy_text.rstrip("\n") + "\n\n" + fragment


def write_into(policy_file: Path, result: ImportResult) -> None:
    """Append the imported tables to the policy file (its mode and owner unchanged)."""
    current = policy_file.read_text(encoding="utf-8")
    parse_gateway_policy(appended(current, result.text))
    with policy_file.open("a", encoding="utf-8") as out:
        out.write(appended(current, result.text)[len(current) :])


def _loads(text: str) -> Mapping[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"gateway.toml is not valid TOML: {exc}", hint="fix it first") from None


def _base_url(spec: Spec, given: str | None) -> str:
    servers = spec.servers()
    url = given if given is not None else (servers[0] if servers else "")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ConfigError(
            f"no https base URL: the description's servers are {servers or 'not given'}",
            hint="give one with --base-url https://…",
        )
    return url.rstrip("/")


def _service_name(base_url: str) -> str:
    """`https://api.github.com` → `github`: the host's name without api./www. and the TLD."""
    labels = (urlsplit(base_url).hostname or "").split(".")
    labels = [label for label in labels[:-1] if label not in ("api", "www")] or ["api"]
    return re.sub(r"[^A-Za-z0-9_-]", "-", labels[-1])[:64] or "api"


def _operation_text(service: str, op: ImportedOperation) -> str:
    # Comments carry the description's own text (ids, paths, media types, property names):
    # a line break in one would end the comment and write a key the human reads past.
    lines = [_comment(f"operationId {op.operation_id}: {op.method} {op.path}")]
    lines += [_comment(f"REVIEW: {note}") for note in op.notes]
    lines.append(f"[http.services.{_key(service)}.operations.{_key(op.name)}]")
    lines.append(f"method = {_string(op.method)}")
    lines.append(f"path = {_string(op.path)}")
    if op.description:
        lines.append(f"description = {_string(op.description)}")
    lines.append(f"read_only = {'true' if op.read_only else 'false'}")
    if op.query:
        lines.append(f"query = {_value(op.query)}")
    if op.headers:
        lines.append(f"headers = {_value(op.headers)}")
    if op.json_body is not None:
        lines.append(f"json_body = {_value(op.json_body)}")
    if op.response_fields:
        lines.append("# the answer's required fields; keep only what the agent needs")
        items = "".join(f"  {_string(name)},\n" for name in op.response_fields)
        lines.append(f"response_fields = [\n{items}]")
    for param in op.params:
        lines += [_comment(f"REVIEW: {flag}") for flag in param.mapped.flags]
        lines.append(f"params.{_key(param.name)} = {_spec_text(param.mapped.spec)}")
    return "\n".join(lines) + "\n"


def _spec_text(spec: ParamSpec) -> str:
    fields: dict[str, object] = {}
    if spec.type == "int":
        fields["type"] = "int"
        fields.update({k: v for k, v in (("min", spec.min), ("max", spec.max)) if v is not None})
    else:
        if spec.enum is not None:
            fields["enum"] = spec.enum
        if spec.pattern is not None:
            fields["pattern"] = spec.pattern
        fields["max_length"] = spec.max_length
    return _value(fields)


def _value(value: object) -> str:
    """TOML for a string, integer, list or (inline) table of those."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes, with every control character escaped as TOML
    requires (JSON leaves DEL raw) and non-ASCII text kept readable."""
    return '"' + _inert(json.dumps(text, ensure_ascii=False)[1:-1]) + '"'


def _comment(text: str) -> str:
    """One comment line, whatever ``text`` holds."""
    return "# " + _inert(text)


def _inert(text: str) -> str:
    """``text`` with every character that could break a line or change how the rest of it
    reads (controls, bidirectional and other format characters, line and paragraph separators)
    written as a TOML escape, so the file shows what it holds; other text stays readable."""
    return "".join(_escape(char) for char in text)


# Controls, format characters (bidirectional overrides among them), line and paragraph
# separators, and code points with no character assigned.
_UNSEEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escape(char: str) -> str:
    if unicodedata.category(char) not in _UNSEEN:
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
