"""`sp context call TOOL ARGS`: one tool of the real context server, called from a shell.

The server is started exactly as an MCP client starts it (`sp context serve` over stdio, with
this environment) and asked through the MCP SDK's own client, so what a person sees here is
what an agent would get. Arguments come as one JSON object or as ``key=value`` words; a value
is read by the type the tool's input schema gives its key (a string stays a string, so
``path=007`` is not the number 7), and as JSON where the schema wants something else.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, TextIO, cast

from safeport.errors import Denied, Error, UsageError
from safeport.shared.launch import sp_command


class ToolFailed(Denied):
    """The tool answered with an error (refused, not found, denied): a negative verdict."""


@dataclass(frozen=True)
class ToolAnswer:
    """What the tool returned: its structured result when it has one, else its text."""

    tool: str
    structured: Any
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "result": self.structured, "text": self.text}


def parse_arguments(words: Sequence[str], schema: Mapping[str, Any]) -> dict[str, Any]:
    """ARGS as the tool will get them: one JSON object, or ``key=value`` words read by the
    schema's type for each key (pure: no I/O)."""
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        try:
            value = json.loads(words[0])
        except json.JSONDecodeError as exc:
            raise UsageError(f"ARGS is not a JSON object: {exc.msg} at {exc.pos}") from exc
        if not isinstance(value, dict):
            raise UsageError("ARGS must be a JSON object or key=value words")
        return value
    properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    arguments: dict[str, Any] = {}
    for word in words:
        key, equals, raw = word.partition("=")
        if not equals or not key:
            raise UsageError(f"{word!r} is not key=value", hint="or give one JSON object")
        if key in arguments:
            raise UsageError(f"{key!r} is given twice")
        arguments[key] = _typed(raw, properties.get(key))
    return arguments


def _typed(raw: str, spec: Any) -> Any:
    kinds = _kinds(spec)
    if kinds and kinds <= {"string"}:
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw  # a word the schema did not type: the server's validation has the last word


def _kinds(spec: Any) -> set[str]:
    if not isinstance(spec, Mapping):
        return set()
    kind = spec.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind if k != "null"}
    found: set[str] = set()
    for option in spec.get("anyOf", []) or []:
        found |= _kinds(option)
    found.discard("null")
    return found


def call_tool(
    tool: str,
    words: Sequence[str],
    serve_args: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> ToolAnswer:
    """Start `sp context serve SERVE_ARGS` over stdio, call ``tool`` once, and stop it."""
    import anyio
    from mcp.shared.exceptions import MCPError

    # The server's log goes aside: shown only when the call did not get an answer from it.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log_file:
        log = cast(TextIO, log_file)
        try:
            return anyio.run(_call, tool, list(words), list(serve_args), timeout_s, env, log)
        except TimeoutError as exc:
            raise ToolFailed(
                f"{tool} gave no answer within {timeout_s:g} s", hint=_tail(log)
            ) from exc
        except MCPError as exc:  # the protocol's refusal (a bad request) or a server gone
            raise ToolFailed(f"{tool}: {exc}", hint=_tail(log)) from exc


def _tail(log: IO[str]) -> str | None:
    log.seek(0)
    lines = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    return ("the server said: " + " / ".join(lines[-3:])) if lines else None


async def _call(
    tool: str,
    words: list[str],
    serve_args: list[str],
    timeout_s: float,
    env: Mapping[str, str] | None,
    log: TextIO,
) -> ToolAnswer:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = sp_command(["context", "serve", *serve_args])
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=dict(os.environ if env is None else env)
    )
    # Nothing is raised inside the client's task group (it would come out wrapped in an
    # exception group); the outcome is kept and raised once the server is stopped.
    outcome: ToolAnswer | Error
    with anyio.fail_after(timeout_s):
        async with Client(stdio_client(params, errlog=log)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            arguments = (
                _unknown(tool, tools) if tool not in tools else _prepared(words, tools[tool])
            )
            if isinstance(arguments, Error):
                outcome = arguments
            else:
                result = await client.call_tool(tool, arguments)
                text = "\n".join(getattr(block, "text", "") for block in result.content).strip()
                outcome = (
                    ToolFailed(text or f"{tool} failed")
                    if result.is_error
                    else ToolAnswer(tool, result.structured_content, text)
                )
    if isinstance(outcome, Error):
        raise outcome
    return outcome


def _unknown(tool: str, tools: Mapping[str, Any]) -> Error:
    return UsageError(
        f"the context server has no tool {tool!r}", hint="it has " + ", ".join(sorted(tools))
    )


def _prepared(words: list[str], tool: Any) -> dict[str, Any] | Error:
    try:
        return parse_arguments(words, tool.input_schema)
    except UsageError as exc:
        return exc
