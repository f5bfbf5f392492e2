"""The operations behind `sp client install|check|list|uninstall`, on the files of
:mod:`safeport.context_server.mcp_clients.config_files`: what an installed entry says, how it
differs from the one this installation would write, and writing a file only whole (the command
renders).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from safeport.context_server.mcp_clients.config_files import (
    CLAUDE_SCOPES,
    CLIENTS,
    ENTRY_NAME,
    ClaudeScope,
    ClientName,
    ClientTarget,
    entry_for,
    imports_project_code,
    installed_entry,
    merged_text,
    misfiled_target,
    read_config_text,
    read_json_config,
    server_command,
    target_for,
    toml_block,
    unsafe_project_entries,
    without_entry,
)
from safeport.errors import EnvironmentProblem
from safeport.shared.paths import LOCATION_VARIABLES, location_settings

# What an entry says, and how it differs from the one this installation would write.


@dataclass(frozen=True)
class EntrySummary:
    """The settings a human cares about in one entry, read from its command line and env."""

    profile: str | None
    roots: tuple[str, ...]
    origin: str | None
    env: dict[str, str]


def summarize(entry: Mapping[str, Any]) -> EntrySummary:
    args = entry.get("args")
    words = [str(arg) for arg in args] if isinstance(args, list) else []
    env = entry.get("env")
    return EntrySummary(
        profile=_option(words, "--profile") or ("reader" if "serve" in words else None),
        roots=tuple(_options(words, "--root")),
        origin=_option(words, "--origin"),
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
    )


def entry_differences(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """Each way ``found`` differs from ``wanted``, as sentences; empty when they are equal."""
    if dict(found) == dict(wanted):
        return []
    problems: list[str] = []
    if imports_project_code(dict(found)):
        problems.append(
            "it runs `python -m safeport` without -I, so it imports code from the project "
            "folder (written by an older version)"
        )
    if found.get("command") != wanted.get("command"):
        problems.append(
            f"interpreter: {found.get('command')}, not this safeport's {wanted.get('command')}"
        )
    have, want = summarize(found), summarize(wanted)
    if have.profile != want.profile:
        problems.append(f"profile: {have.profile}, not {want.profile}")
    if have.roots != want.roots:
        problems.append(f"roots: {_listed(have.roots)}, not {_listed(want.roots)}")
    if have.origin != want.origin:
        problems.append(f"origin label: {have.origin}, not {want.origin}")
    for name in LOCATION_VARIABLES:
        here, there = have.env.get(name), want.env.get(name)
        if here != there:
            problems.append(
                f"{name}: {here or 'not set'} in the entry, "
                f"{there or 'not set'} for this `sp`"
                + (" (the server would look in another place)" if there else "")
            )
    if not problems:
        keys = sorted(key for key in set(found) | set(wanted) if found.get(key) != wanted.get(key))
        problems.append(f"other settings differ: {', '.join(keys)}")
    return problems


def _option(words: list[str], name: str) -> str | None:
    values = _options(words, name)
    return values[-1] if values else None


def _options(words: list[str], name: str) -> list[str]:
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == name]


def _listed(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "none"


# The operations behind `sp client install|list|uninstall`; the command only renders.


@dataclass(frozen=True)
class Setup:
    """Which client entry, for which folders and profile, in this user's environment."""

    client: ClientName
    roots: tuple[Path, ...]
    profile: str = "reader"
    scope: ClaudeScope = "local"
    home: Path = field(default_factory=Path.home)
    platform: str = field(default_factory=lambda: sys.platform)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    python: str = field(default_factory=lambda: sys.executable)

    @property
    def target(self) -> ClientTarget:
        return target_for(
            self.client,
            home=self.home,
            platform=self.platform,
            root=self.roots[0],
            env=self.env,
            scope=self.scope,
        )

    @property
    def entry(self) -> dict[str, Any]:
        command, args = server_command(self.python, self.roots, self.profile, self.client)
        return entry_for(self.target, command, args, location_settings(self.env))


@dataclass(frozen=True)
class InstallResult:
    path: Path
    changed: bool
    cleaned: tuple[Path, ...]  # project files an older, unsafe entry was removed from


def install(setup: Setup, *, replace: bool) -> InstallResult:
    target, entry = setup.target, setup.entry
    existing = read_config_text(target.path)
    text = merged_text(target, _without_misfiled(setup, existing), entry, replace=replace)
    legacy = [
        (old, cleaned)
        for old, cleaned in unsafe_project_entries(setup.client, root=setup.roots[0])
        if old.path != target.path
    ]
    for old, cleaned in legacy:
        write_atomically(old.path, cleaned)
    if text != existing:
        write_atomically(target.path, text)
    return InstallResult(target.path, text != existing, tuple(old.path for old, _ in legacy))


def check(setup: Setup) -> list[str]:
    """What is wrong with the installed entry (and the project's own files); empty = set up."""
    target, entry = setup.target, setup.entry
    current = installed_entry(target, read_config_text(target.path))
    problems = leftover_problems(setup)
    if current is None:
        problems.append(f"no `{ENTRY_NAME}` entry in {target.path} under {'.'.join(target.key)}")
    else:
        problems += entry_differences(current, entry)
    return problems


def leftover_problems(setup: Setup) -> list[str]:
    """Entries an older version left where they are unsafe or never read (an install removes
    them), whatever the client itself says about the entry it runs."""
    target = setup.target
    problems = [
        f"{old.path}: an older `{ENTRY_NAME}` entry imports code from the project folder"
        for old, _ in unsafe_project_entries(setup.client, root=setup.roots[0])
        if old.path != target.path
    ]
    misfiled = misfiled_target(target, root=setup.roots[0])
    if misfiled is not None and installed_entry(misfiled, read_config_text(target.path)):
        problems.append(
            f"an entry under {misfiled.key[1]} in {target.path}, which Claude Code never reads "
            f"there: it files this project under {target.key[1]}"
        )
    return problems


def _without_misfiled(setup: Setup, existing: str | None) -> str | None:
    """The file without an entry an older version filed where the client does not look (it
    moves to where the client does)."""
    misfiled = misfiled_target(setup.target, root=setup.roots[0])
    if existing is None or misfiled is None or installed_entry(misfiled, existing) is None:
        return existing
    return without_entry(misfiled, existing)


def printed_entry(setup: Setup) -> str:
    """The entry alone, in the file's own format, for a person to read or paste."""
    target, entry = setup.target, setup.entry
    if target.format == "toml":
        return toml_block(".".join(target.key), entry)
    return json.dumps({ENTRY_NAME: entry}, indent=2) + "\n"


@dataclass(frozen=True)
class UninstallResult:
    path: Path
    backup: Path | None  # None: there was no entry, nothing was written


def uninstall(setup: Setup, *, now: datetime, backup_dir: Path) -> UninstallResult:
    """Remove the entry; the file as it was is kept in ``backup_dir`` (safeport's own private
    folder), never beside it: a project's client file would leave a copy holding this
    machine's paths, and any other server's settings, in the project for a commit to carry."""
    target = setup.target
    existing = read_config_text(target.path)
    kept = _without_misfiled(setup, existing)
    if existing is None or (installed_entry(target, existing) is None and kept == existing):
        if existing is not None and target.format == "json":
            read_json_config(target, existing)  # a file that does not parse says so
        return UninstallResult(target.path, None)
    assert kept is not None
    text = without_entry(target, kept) if installed_entry(target, kept) else kept
    real = Path(os.path.realpath(target.path))
    stamp = now.strftime("%Y%m%dT%H%M%S")
    backup = backup_dir / f"{setup.client}.{real.name}.{stamp}.bak"
    write_atomically(backup, existing)
    write_atomically(target.path, text)
    return UninstallResult(target.path, backup)


@dataclass(frozen=True)
class Listed:
    """One place a client reads, and what safeport's entry there says."""

    client: ClientName
    scope: str | None
    path: Path
    summary: EntrySummary | None
    problems: tuple[str, ...]


def listing(root: Path, **where: Any) -> list[Listed]:
    """Every place the five clients read for ``root``: the entry's settings, and what differs
    from the entry this installation would write with the same profile and roots."""
    places: list[tuple[ClientName, ClaudeScope | None]] = [
        *(("claude-code", scope) for scope in CLAUDE_SCOPES),
        *((name, None) for name in CLIENTS if name != "claude-code"),
    ]
    found: list[Listed] = []
    for client, scope in places:
        base = Setup(client, (root,), scope=scope or "local", **where)
        target = base.target
        try:
            current = installed_entry(target, read_config_text(target.path))
        except OSError as exc:
            found.append(Listed(client, scope, target.path, None, (f"unreadable: {exc.strerror}",)))
            continue
        if current is None:
            found.append(Listed(client, scope, target.path, None, ()))
            continue
        summary = summarize(current)
        roots = tuple(Path(r) for r in summary.roots) or (root,)
        same = Setup(
            client, roots, profile=summary.profile or "reader", scope=scope or "local", **where
        )
        problems = entry_differences(current, same.entry)
        found.append(Listed(client, scope, target.path, summary, tuple(problems)))
    return found


def write_atomically(path: Path, text: str) -> None:
    # Through a symlink (dotfiles managers link these files): update the file it points at,
    # rather than replace the link with a copy that the dotfiles no longer track.
    path = Path(os.path.realpath(path))
    temp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        temp = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        temp.chmod(mode)
        temp.replace(path)
    except OSError as exc:
        if temp is not None:
            temp.unlink(missing_ok=True)
        raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}") from exc
