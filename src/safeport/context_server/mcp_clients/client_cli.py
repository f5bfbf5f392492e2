"""Asking a client itself what it will run for `safeport`, rather than reading our file back.

A file can hold the right entry under a key the client never reads (Claude Code's local scope
inside a git repository was one), so ``--check`` and ``sp doctor`` ask the client's own CLI, run
in the project folder with the user's home, when it is installed: ``claude mcp get safeport``
(which also starts the server, as Claude Code would) and ``codex mcp get safeport --json``. The
answer is turned back into an entry and compared like one read from the file. Without the CLI
the caller reads the file, and says so.

The CLI is looked up on the user's PATH, absolute folders outside the served folders only: a
relative entry (``.`` or an empty one), or a project's own ``.venv/bin`` or ``node_modules/.bin``
on PATH, would find a ``claude`` the agent planted. The CLI then runs with that same PATH, since
it looks up its own interpreter there (``#!/usr/bin/env node``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeport.context_server.mcp_clients.config_files import ENTRY_NAME

ASK_TIMEOUT_S = 90.0  # `claude mcp get` waits up to its own MCP_TIMEOUT to connect
_PROGRAMS = {"claude-code": "claude", "codex": "codex"}
_CLAUDE_SCOPES = {"Local config": "local", "Project config": "project", "User config": "user"}


@dataclass(frozen=True)
class ClientAnswer:
    """What the client's CLI said: the entry it would run (None: it has none), and how it
    says the server is doing, when it says."""

    asked: str  # the command line, for the report
    entry: dict[str, Any] | None
    scope: str | None = None
    status: str | None = None  # Claude Code's health check, e.g. "✔ Connected"
    issue: str | None = None  # why it failed, or what it needs, in the client's words
    error: str | None = None  # the CLI itself failed (not: has no such server)


def trusted_path(env: Mapping[str, str], served: Sequence[Path] = ()) -> str:
    """The PATH a client's CLI is found and run with: the absolute folders of the user's PATH
    that lie outside every served folder (the agent writes there)."""
    roots = [Path(root).resolve() for root in served]
    kept = []
    for folder in env.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_absolute():
            continue
        real = Path(folder).resolve()
        if not any(real.is_relative_to(root) for root in roots):
            kept.append(folder)
    return os.pathsep.join(kept)


def client_program(client: str, env: Mapping[str, str], served: Sequence[Path] = ()) -> Path | None:
    """The client's CLI on the trusted PATH (``trusted_path``), or None; a link that leads
    into a served folder is not taken either."""
    name = _PROGRAMS.get(client)
    if name is None:
        return None
    roots = [Path(root).resolve() for root in served]
    for folder in trusted_path(env, served).split(os.pathsep):
        if not folder:
            continue
        candidate = Path(folder) / name
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            continue
        if any(candidate.resolve().is_relative_to(root) for root in roots):
            continue
        return candidate
    return None


def ask_client(client: str, program: Path, *, folder: Path, env: Mapping[str, str]) -> ClientAnswer:
    """Run the client's own `get` for our entry in ``folder``, as the user would."""
    argv = (
        [str(program), "mcp", "get", ENTRY_NAME]
        if client == "claude-code"
        else [str(program), "mcp", "get", ENTRY_NAME, "--json"]
    )
    asked = " ".join([program.name, *argv[1:]])
    try:
        done = subprocess.run(
            argv, cwd=folder, env=dict(env), capture_output=True, text=True,
            timeout=ASK_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return ClientAnswer(asked, None, error=f"no answer within {ASK_TIMEOUT_S:.0f} s")
    except OSError as exc:
        return ClientAnswer(asked, None, error=f"cannot run it: {exc.strerror}")
    if client == "claude-code":
        return parse_claude_get(asked, done.returncode, done.stdout, done.stderr)
    return parse_codex_get(asked, done.returncode, done.stdout, done.stderr)


def parse_claude_get(asked: str, code: int, out: str, err: str) -> ClientAnswer:
    """``claude mcp get``'s report: ``Scope:``, ``Status:``, ``Command:``, ``Args:`` (joined by
    spaces) and ``Environment:`` lines, then ``KEY=value`` lines."""
    if code != 0:
        said = (err or out).strip().splitlines()
        if said and said[0].startswith("No MCP server named"):
            return ClientAnswer(asked, None, issue=said[0])
        return ClientAnswer(asked, None, error=said[0] if said else f"exit status {code}")
    fields: dict[str, str] = {}
    env: dict[str, str] = {}
    in_env = False
    for line in out.splitlines():
        text = line.strip()
        if in_env and "=" in text and line.startswith("    "):
            name, _, value = text.partition("=")
            env[name] = value
            continue
        in_env = False
        name, sep, value = text.partition(":")
        if sep and name in {"Scope", "Status", "Issue", "Type", "Command", "Args"}:
            fields[name] = value.strip()
        in_env = name == "Environment"
    if "Command" not in fields:
        return ClientAnswer(asked, None, error="its report names no command")
    scope = next(
        (v for k, v in _CLAUDE_SCOPES.items() if fields.get("Scope", "").startswith(k)), None
    )
    entry: dict[str, Any] = {
        "type": fields.get("Type", "stdio"),
        "command": fields["Command"],
        "args": fields.get("Args", ""),  # joined by spaces: compared as joined, see below
        "env": env,
    }
    status = fields.get("Status")
    return ClientAnswer(asked, entry, scope=scope, status=status, issue=fields.get("Issue"))


def parse_codex_get(asked: str, code: int, out: str, err: str) -> ClientAnswer:
    """``codex mcp get --json``: the server with its ``transport`` (command, args, env)."""
    if code != 0:
        said = [line for line in err.splitlines() if line.startswith("Error:")]
        if said and "No MCP server named" in said[0]:
            return ClientAnswer(asked, None, issue=said[0].removeprefix("Error: "))
        return ClientAnswer(asked, None, error=said[0] if said else f"exit status {code}")
    try:
        server = json.loads(out)
        transport = server["transport"]
        entry: dict[str, Any] = {"command": transport["command"], "args": transport["args"]}
        # Codex merges a project's .codex/config.toml into the user's entry key by key: any
        # other setting it reports (cwd, env_vars, ...) is one this install did not write.
        extra = {
            key: value
            for key, value in transport.items()
            if key not in {"type", "command", "args", "env"} and value not in (None, [], {}, "")
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return ClientAnswer(asked, None, error="its answer is not the JSON it documents")
    if transport.get("env"):
        entry["env"] = transport["env"]
    entry.update(extra)
    issues = [] if server.get("enabled", True) else ["disabled in Codex's configuration"]
    for key in ("enabled_tools", "disabled_tools"):
        if server.get(key):
            issues.append(f"its configuration sets {key} (only some tools are served)")
    return ClientAnswer(asked, entry, issue="; ".join(issues) or None)


def as_entry(answer_entry: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The client's answer in the shape of ``wanted``: Claude Code prints the args joined by
    spaces, so the wanted args stand in when they join to the same text."""
    found = dict(answer_entry)
    args = found.get("args")
    wanted_args = wanted.get("args", [])
    if isinstance(args, str):
        found["args"] = list(wanted_args) if args == " ".join(wanted_args) else args.split(" ")
    if "type" in found and "type" not in wanted:
        found.pop("type")
    if found.get("env") == {} and "env" not in wanted:
        found.pop("env")
    return found
