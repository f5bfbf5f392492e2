"""Where each MCP client keeps its server list, and how a safeport entry is merged into it (pure).

The entry starts the context server with this installation's own interpreter, so the client runs
exactly the safeport the user installed, and labels the journal with the client's name
(``--origin``). Merging keeps every other server; an existing ``safeport`` entry that differs is
replaced only when the caller says so, and a file that does not parse is never overwritten.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from safeport.errors import ConfigError, UsageError

ClientName = Literal["claude-code", "claude-desktop", "codex", "cursor", "vscode"]
CLIENTS: tuple[ClientName, ...] = ("claude-code", "claude-desktop", "codex", "cursor", "vscode")
ENTRY_NAME = "safeport"


@dataclass(frozen=True)
class ClientTarget:
    client: ClientName
    path: Path
    format: Literal["json", "toml"]
    key: str  # the table that lists servers: mcpServers, servers or mcp_servers


def target_for(client: str, *, home: Path, platform: str, root: Path) -> ClientTarget:
    """The config file a client reads (project-scoped clients use the served root)."""
    if client == "claude-code":
        return ClientTarget("claude-code", root / ".mcp.json", "json", "mcpServers")
    if client == "claude-desktop":
        base = (
            home / "Library" / "Application Support" / "Claude"
            if platform == "darwin"
            else home / ".config" / "Claude"
        )
        return ClientTarget(
            "claude-desktop", base / "claude_desktop_config.json", "json", "mcpServers"
        )
    if client == "cursor":
        return ClientTarget("cursor", home / ".cursor" / "mcp.json", "json", "mcpServers")
    if client == "vscode":
        return ClientTarget("vscode", root / ".vscode" / "mcp.json", "json", "servers")
    if client == "codex":
        return ClientTarget("codex", home / ".codex" / "config.toml", "toml", "mcp_servers")
    raise UsageError(f"unknown client {client!r}; choose one of {', '.join(CLIENTS)}")


def server_command(
    python: str, roots: Sequence[Path], profile: str, origin: str
) -> tuple[str, list[str]]:
    args = ["-m", "safeport", "context", "serve", "--profile", profile, "--origin", origin]
    for root in roots:
        args += ["--root", str(root)]
    return python, args


def entry_for(target: ClientTarget, command: str, args: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": args}
    if target.client == "vscode":
        entry = {"type": "stdio", **entry}
    return entry


def merged_text(
    target: ClientTarget, existing: str | None, entry: dict[str, Any], *, replace: bool
) -> str:
    """The file's new text with our entry in place; raises rather than clobber anything."""
    if target.format == "toml":
        return _merge_toml(target, existing, entry, replace=replace)
    data: dict[str, Any] = {}
    if existing is not None and existing.strip():
        try:
            loaded = json.loads(existing)
        except ValueError as exc:
            raise ConfigError(f"{target.path} is not valid JSON; fix it by hand first") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{target.path} does not hold a JSON object")
        data = loaded
    servers = data.setdefault(target.key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"`{target.key}` in {target.path} is not an object")
    current = servers.get(ENTRY_NAME)
    if current is not None and current != entry and not replace:
        raise ConfigError(
            f"{target.path} already has a different `{ENTRY_NAME}` server",
            hint="run again with --replace to overwrite it, or --print to see ours",
        )
    servers[ENTRY_NAME] = entry
    return json.dumps(data, indent=2) + "\n"


def installed_entry(target: ClientTarget, existing: str | None) -> dict[str, Any] | None:
    """Our entry as the client would read it, or None."""
    if existing is None:
        return None
    try:
        data = tomllib.loads(existing) if target.format == "toml" else json.loads(existing)
    except (ValueError, tomllib.TOMLDecodeError):
        return None
    servers = data.get(target.key) if isinstance(data, dict) else None
    entry = servers.get(ENTRY_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


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
    block = _toml_block(target.key, entry)
    if current is None:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
    if current == entry:
        return text
    if not replace:
        raise ConfigError(
            f"{target.path} already has a different `{ENTRY_NAME}` server",
            hint="run again with --replace to overwrite it, or --print to see ours",
        )
    # Replace our own table only: from its header to the next table header.
    header = re.compile(rf"^\[{re.escape(target.key)}\.{ENTRY_NAME}\]\s*$", re.MULTILINE)
    match = header.search(text)
    if match is None:
        raise ConfigError(
            f"cannot locate `[{target.key}.{ENTRY_NAME}]` in {target.path} to replace it"
        )
    following = re.compile(r"^\[", re.MULTILINE).search(text, match.end())
    end = following.start() if following else len(text)
    return text[: match.start()] + block + ("\n" + text[end:] if following else "")


def _toml_block(key: str, entry: dict[str, Any]) -> str:
    lines = [f"[{key}.{ENTRY_NAME}]"]
    for name, value in entry.items():
        lines.append(f"{name} = {json.dumps(value)}")  # JSON strings/arrays are valid TOML here
    return "\n".join(lines) + "\n"
