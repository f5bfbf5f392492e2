"""An OpenAPI 3 description as plain data: load it, follow its local `$ref`s, find operations.

Only references inside the document (``#/components/...``) are followed: a remote one would
make the policy depend on a file fetched from somewhere at import time, so it is refused.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from safeport.errors import ConfigError

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head")
# A `$ref` chain longer than this is a cycle (or a description no one should import).
_MAX_REF_DEPTH = 32


@dataclass(frozen=True)
class SpecOperation:
    """One operation of the description, its references resolved at the top level."""

    operation_id: str
    method: str  # upper case
    path: str
    summary: str
    parameters: tuple[Mapping[str, Any], ...]  # path-level and operation-level, merged
    body_schema: Mapping[str, Any] | None  # the application/json request body schema
    body_required: bool
    other_body_types: tuple[str, ...]  # request media types other than JSON
    success_schema: Mapping[str, Any] | None  # the first 2xx JSON answer's schema


class Spec:
    """The loaded document and the reference resolver every mapping step shares."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        version = document.get("openapi")
        if not isinstance(version, str) or not version.startswith("3."):
            raise ConfigError(
                "not an OpenAPI 3 description (no `openapi: 3.x` at the top)",
                hint="Swagger 2.0 files can be converted with swagger2openapi",
            )
        self.document = document

    def resolve(self, node: object) -> Any:
        """``node`` with its own `$ref` followed (not its children's)."""
        seen: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/"):
                raise ConfigError(
                    f"`$ref` {ref!r} points outside this file",
                    hint="only local references (#/components/...) are followed; "
                    "bundle the description into one file first",
                )
            if ref in seen or len(seen) >= _MAX_REF_DEPTH:
                raise ConfigError(f"`$ref` {ref!r} refers to itself")
            seen.append(ref)
            node = self._pointer(ref)
        return node

    def _pointer(self, ref: str) -> Any:
        node: Any = self.document
        for raw in ref[2:].split("/"):
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise ConfigError(f"`$ref` {ref!r} names nothing in this file")
        return node

    def servers(self) -> list[str]:
        """The server URLs, each variable replaced by its default."""
        urls = []
        for server in self.document.get("servers") or []:
            server = self.resolve(server)
            url = server.get("url") if isinstance(server, Mapping) else None
            if not isinstance(url, str):
                continue
            for name, variable in (server.get("variables") or {}).items():
                default = variable.get("default") if isinstance(variable, Mapping) else None
                url = url.replace("{" + str(name) + "}", str(default))
            urls.append(url)
        return urls

    def title(self) -> str:
        info = self.document.get("info")
        title = info.get("title") if isinstance(info, Mapping) else None
        return title if isinstance(title, str) else ""

    def operation_ids(self) -> dict[str, tuple[str, str]]:
        """Every operationId and where it is: (path, method)."""
        found: dict[str, tuple[str, str]] = {}
        for path, item in (self.document.get("paths") or {}).items():
            item = self.resolve(item)
            if not isinstance(item, Mapping):
                continue
            for method in HTTP_METHODS:
                operation = item.get(method)
                if isinstance(operation, Mapping) and isinstance(operation.get("operationId"), str):
                    found.setdefault(operation["operationId"], (str(path), method))
        return found

    def operation(self, operation_id: str) -> SpecOperation:
        ids = self.operation_ids()
        if operation_id not in ids:
            near = difflib.get_close_matches(operation_id, list(ids), n=5, cutoff=0.5)
            hint = (
                "did you mean " + ", ".join(f"`{name}`" for name in near) + "?"
                if near
                else f"the description has {len(ids)} operationIds"
            )
            raise ConfigError(f"no operation with operationId {operation_id!r}", hint=hint)
        path, method = ids[operation_id]
        item = self.resolve(self.document["paths"][path])
        operation = item[method]
        params: dict[tuple[str, str], Mapping[str, Any]] = {}
        # Path-level parameters first: the operation's own replace those with the same name
        # and location, as the specification says.
        for raw in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
            param = self.resolve(raw)
            if isinstance(param, Mapping) and isinstance(param.get("name"), str):
                params[(str(param["name"]), str(param.get("in")))] = param
        body_schema, body_required, others = self._body(operation.get("requestBody"))
        summary = operation.get("summary") or operation.get("description") or ""
        return SpecOperation(
            operation_id=operation_id,
            method=method.upper(),
            path=path,
            summary=summary if isinstance(summary, str) else "",
            parameters=tuple(params.values()),
            body_schema=body_schema,
            body_required=body_required,
            other_body_types=others,
            success_schema=self._success(operation.get("responses")),
        )

    def _success(self, responses: object) -> Mapping[str, Any] | None:
        if not isinstance(responses, Mapping):
            return None
        # YAML reads `200:` as a number; the first 2xx answer in code order is the success.
        codes = sorted((str(code), answer) for code, answer in responses.items())
        answer = next((self.resolve(a) for code, a in codes if code.startswith("2")), None)
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not isinstance(content, Mapping):
            return None
        for media_type, media in content.items():
            if "json" in str(media_type).lower():
                media = self.resolve(media)
                schema = self.resolve(media.get("schema")) if isinstance(media, Mapping) else None
                return schema if isinstance(schema, Mapping) else None
        return None

    def _body(self, raw: object) -> tuple[Mapping[str, Any] | None, bool, tuple[str, ...]]:
        if raw is None:
            return None, False, ()
        body = self.resolve(raw)
        content = body.get("content") if isinstance(body, Mapping) else None
        if not isinstance(content, Mapping):
            return None, False, ()
        json_type = next(
            (t for t in content if t.split(";")[0].strip().lower() == "application/json"),
            next((t for t in content if t.split(";")[0].strip().lower().endswith("+json")), None),
        )
        others = tuple(str(t) for t in content if t != json_type)
        if json_type is None:
            return None, bool(body.get("required")), others
        media = self.resolve(content[json_type])
        schema = self.resolve(media.get("schema")) if isinstance(media, Mapping) else None
        return (
            schema if isinstance(schema, Mapping) else None,
            bool(body.get("required")),
            others,
        )


def load_spec(path: Path) -> Spec:
    """Read a description from a JSON or YAML file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    try:
        document = (
            json.loads(text)
            if text.lstrip().startswith("{")
            # safe_load builds plain data only: no tags that construct objects.
            else yaml.safe_load(text)
        )
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path} is neither JSON nor YAML: {exc}") from None
    if not isinstance(document, Mapping):
        raise ConfigError(f"{path} does not hold an OpenAPI description (not a mapping)")
    return Spec(document)
