"""Where each MCP client keeps its server list, and how a safeport entry is merged into it.

The entry starts the context server with this installation's own interpreter in isolated mode
(``python -I -m safeport``, see ``shared/launch.py``), so the client runs exactly the safeport the
user installed whatever folder it starts the server in, and labels the journal with the client's
name (``--origin``). An entry an older version wrote (``python -m safeport`` without ``-I``, which
imports from the project folder) is flagged by ``--check`` and rewritten by an install.
Merging keeps every other server; any other differing ``safeport`` entry is replaced only when the
caller says so, and a file that does not parse is never overwritten.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from safeport.context_server.mcp_clients.project_keys import claude_code_project
from safeport.errors import ConfigError, UsageError
from safeport.shared import jsonc
from safeport.shared.launch import imports_from_working_folder, sp_command
from safeport.shared.text_lines import split_lines

ClientName = Literal["claude-code", "claude-desktop", "codex", "cursor", "vscode"]
CLIENTS: tuple[ClientName, ...] = ("claude-code", "claude-desktop", "codex", "cursor", "vscode")
ENTRY_NAME = "safeport"


@dataclass(frozen=True)
class ClientTarget:
    client: ClientName
    path: Path
    format: Literal["json", "toml"]
    key: tuple[str, ...]  # the nested table that lists servers, e.g. ("mcpServers",)


ClaudeScope = Literal["local", "project", "user"]
CLAUDE_SCOPES: tuple[ClaudeScope, ...] = ("local", "project", "user")


def target_for(
    client: str,
    *,
    home: Path,
    platform: str,
    root: Path,
    env: Mapping[str, str] | None = None,
    scope: ClaudeScope = "local",
) -> ClientTarget:
    """The config file a client reads (project-scoped clients use the served root), where the
    client's own variables (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``) move it. ``scope`` is
    Claude Code's, as ``claude mcp add --scope`` names them."""
    env = env or {}
    if client == "claude-code":
        # Local scope (the default, as `claude mcp add`): Claude Code's own per-project list
        # in ~/.claude.json. A project-scoped .mcp.json is meant to be committed and would hand
        # teammates a command line that names this machine's interpreter; user scope serves
        # these roots in every project.
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
        if scope == "project":
            return ClientTarget("claude-code", root / ".mcp.json", "json", ("mcpServers",))
        if scope == "user":
            return ClientTarget("claude-code", base / ".claude.json", "json", ("mcpServers",))
        # Filed under the folder Claude Code itself uses: the git top-level (the main
        # checkout's, from a worktree), not the served folder (see project_keys.py).
        project = str(claude_code_project(root))
        return ClientTarget(
            "claude-code", base / ".claude.json", "json", ("projects", project, "mcpServers")
        )
    if client == "claude-desktop":
        base = (
            home / "Library" / "Application Support" / "Claude"
            if platform == "darwin"
            else home / ".config" / "Claude"
        )
        return ClientTarget(
            "claude-desktop", base / "claude_desktop_config.json", "json", ("mcpServers",)
        )
    if client == "cursor":
        return ClientTarget("cursor", home / ".cursor" / "mcp.json", "json", ("mcpServers",))
    if client == "vscode":
        return ClientTarget("vscode", root / ".vscode" / "mcp.json", "json", ("servers",))
    if client == "codex":
        base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
        return ClientTarget("codex", base / "config.toml", "toml", ("mcp_servers",))
    raise UsageError(f"unknown client {client!r}; choose one of {', '.join(CLIENTS)}")


def misfiled_target(target: ClientTarget, *, root: Path) -> ClientTarget | None:
    """Where an older version filed Claude Code's local entry (under the served folder itself)
    when that is not the folder Claude Code reads, or None."""
    if target.client != "claude-code" or target.key[:1] != ("projects",):
        return None
    if target.key[1] == str(root):
        return None
    return ClientTarget(target.client, target.path, "json", ("projects", str(root), "mcpServers"))


def project_targets(client: str, *, root: Path) -> list[ClientTarget]:
    """Files in the project itself that this client also reads, and that can carry a
    `safeport` entry of their own (an older version's, or one a repository ships): checked,
    and cleaned when the entry imports project code."""
    if client == "claude-code":
        return [ClientTarget("claude-code", root / ".mcp.json", "json", ("mcpServers",))]
    if client == "codex":
        return [ClientTarget("codex", root / ".codex" / "config.toml", "toml", ("mcp_servers",))]
    if client == "cursor":
        return [ClientTarget("cursor", root / ".cursor" / "mcp.json", "json", ("mcpServers",))]
    return []


def server_command(
    python: str, roots: Sequence[Path], profile: str, origin: str
) -> tuple[str, list[str]]:
    args = ["context", "serve", "--profile", profile, "--origin", origin]
    for root in roots:
        args += ["--root", str(root)]
    argv = sp_command(args, python=python)
    return argv[0], argv[1:]


def entry_for(
    target: ClientTarget, command: str, args: list[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The entry as the client's own tools write it; ``env`` carries the location settings
    (``LOCATION_VARIABLES``) so the server finds the same home and gateway as `sp`."""
    entry: dict[str, Any] = {"command": command, "args": args}
    if env:
        entry["env"] = dict(env)
    if target.client == "vscode":
        entry = {"type": "stdio", **entry}
    if target.client == "claude-code":
        entry = {"type": "stdio", **entry, "env": dict(env or {})}  # `claude mcp add`'s shape
    return entry


def imports_project_code(entry: dict[str, Any]) -> bool:
    """Whether an entry would run code from the folder its client starts it in."""
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    return imports_from_working_folder([command, *(str(arg) for arg in args)])


def unsafe_project_entries(client: str, *, root: Path) -> list[tuple[ClientTarget, str]]:
    """Entries of ours in the project's own files that import project code, each with its
    file's text without it."""
    found: list[tuple[ClientTarget, str]] = []
    for target in project_targets(client, root=root):
        existing = read_config_text(target.path)
        entry = installed_entry(target, existing)
        if existing is not None and entry is not None and imports_project_code(entry):
            found.append((target, without_entry(target, existing)))
    return found


def without_entry(target: ClientTarget, existing: str) -> str:
    """The file's text with our entry removed, every other server and setting kept."""
    if target.format == "toml":
        text = _drop_toml_tables(target, existing)
        _check_toml_result(target, existing, text, expected=None)
        return text
    read_json_config(target, existing)  # refuses, with line and column, what it cannot parse
    return jsonc.without_member(existing, (*target.key, ENTRY_NAME))


def read_config_text(path: Path) -> str | None:
    """The file's text, or None when there is no file yet."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def merged_text(
    target: ClientTarget, existing: str | None, entry: dict[str, Any], *, replace: bool
) -> str:
    """The file's new text with our entry in place; raises rather than clobber anything."""
    if target.format == "toml":
        return _merge_toml(target, existing, entry, replace=replace)
    data = read_json_config(target, existing)
    servers = _servers(data, target, create=True)
    assert servers is not None  # created on the way
    current = servers.get(ENTRY_NAME)
    if _needs_consent(current, entry, replace=replace):
        raise ConfigError(
            f"{target.path} already has a different `{ENTRY_NAME}` server",
            hint="run again with --replace to overwrite it, or --print to see ours",
        )
    if current == entry and existing is not None:
        return existing
    _servers(read_json_config(target, existing), target, create=False)  # every step is an object
    return jsonc.with_member(existing or "", (*target.key, ENTRY_NAME), entry)


def read_json_config(target: ClientTarget, existing: str | None) -> dict[str, Any]:
    """The file's data; JSON with comments and trailing commas (JSONC, as VS Code reads it)
    is accepted, anything else refused with the line and column of the problem."""
    if existing is None or not existing.strip():
        return {}
    try:
        loaded = jsonc.loads(existing)
    except jsonc.JsoncError as exc:
        raise ConfigError(
            f"{target.path} is not valid JSON ({exc.diagnostic()}); fix it by hand first"
        ) from exc
    if not isinstance(loaded, dict):
        raise ConfigError(f"{target.path} does not hold a JSON object")
    return loaded


def installed_entry(target: ClientTarget, existing: str | None) -> dict[str, Any] | None:
    """Our entry as the client would read it, or None."""
    if existing is None:
        return None
    try:
        data = tomllib.loads(existing) if target.format == "toml" else jsonc.loads(existing)
    except (ValueError, tomllib.TOMLDecodeError, ConfigError):
        return None
    try:
        servers = _servers(data, target, create=False)
    except ConfigError:
        return None
    entry = servers.get(ENTRY_NAME) if servers is not None else None
    return entry if isinstance(entry, dict) else None


def _servers(data: Any, target: ClientTarget, *, create: bool) -> dict[str, Any] | None:
    """The table that lists servers, walked (and, when asked, created) along ``target.key``."""
    node = data
    for name in target.key:
        if not isinstance(node, dict):
            raise ConfigError(f"`{'.'.join(target.key)}` in {target.path} is not an object")
        if name not in node:
            if not create:
                return None
            node[name] = {}
        node = node[name]
    if not isinstance(node, dict):
        raise ConfigError(f"`{'.'.join(target.key)}` in {target.path} is not an object")
    return node


def _needs_consent(current: Any, entry: dict[str, Any], *, replace: bool) -> bool:
    """A different entry is replaced only with --replace, except one that imports project
    code (an older version's), which an install always rewrites."""
    if current is None or current == entry or replace:
        return False
    return not (isinstance(current, dict) and imports_project_code(current))


def _merge_toml(
    target: ClientTarget, existing: str | None, entry: dict[str, Any], *, replace: bool
) -> str:
    text = existing or ""
    if text.strip():
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{target.path} is not valid TOML; fix it by hand first") from exc
    current = installed_entry(target, text)
    block = toml_block(".".join(target.key), entry)
    if current == entry:
        return text
    if current is not None and _needs_consent(current, entry, replace=replace):
        raise ConfigError(
            f"{target.path} already has a different `{ENTRY_NAME}` server",
            hint="run again with --replace to overwrite it, or --print to see ours",
        )
    kept = _drop_toml_tables(target, text) if current is not None else text
    merged = (kept.rstrip("\n") + "\n\n" if kept.strip() else "") + block
    _check_toml_result(target, text, merged, expected=entry)
    return merged


def _drop_toml_tables(target: ClientTarget, text: str) -> str:
    """Remove our table and its sub-tables (``[mcp_servers.safeport]``,
    ``[mcp_servers.safeport.env]``), each from its header to the next header."""
    table = re.escape(".".join(target.key) + "." + ENTRY_NAME)
    ours = re.compile(rf"^\s*\[{table}(\.[^\]]*)?\]\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    kept: list[str] = []
    dropping = False
    for line in split_lines(text, keepends=True):  # as TOML ends lines: a header is a header
        if any_header.match(line):
            dropping = bool(ours.match(line))
        if not dropping:
            kept.append(line)
    return "".join(kept)


def _check_toml_result(
    target: ClientTarget, before: str, after: str, *, expected: dict[str, Any] | None
) -> None:
    """The edit is written only if the result parses, holds exactly our entry (or none), and
    keeps every other setting as it was; anything else is refused, never written."""
    refusal = ConfigError(
        f"cannot edit {target.path} safely (its `{ENTRY_NAME}` table is unusual)",
        hint=f"remove `[{'.'.join(target.key)}.{ENTRY_NAME}]` by hand, then run again",
    )
    try:
        old, new = tomllib.loads(before), tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise refusal from exc
    old_servers = _servers(old, target, create=False)
    new_servers = _servers(new, target, create=False)
    if old_servers is not None:
        old_servers.pop(ENTRY_NAME, None)
    found = new_servers.pop(ENTRY_NAME, None) if new_servers is not None else None
    if found != expected or _without_empty(old) != _without_empty(new):
        raise refusal


def _without_empty(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_empty(v) for k, v in data.items() if v != {}}
    return data


def toml_block(key: str, entry: dict[str, Any]) -> str:
    lines = [f"[{key}.{ENTRY_NAME}]"]
    for name, value in entry.items():
        lines.append(f"{name} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    """JSON strings and arrays of strings are valid TOML; a table is written inline."""
    if isinstance(value, dict):
        pairs = ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    return json.dumps(value)
