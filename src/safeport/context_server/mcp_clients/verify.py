"""`--check` and `sp doctor`: whether the client will run this installation's entry, in the
client's own words where its CLI is installed (:mod:`.client_cli`), else from its file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeport.context_server.mcp_clients.client_cli import (
    ClientAnswer,
    as_entry,
    ask_client,
    client_program,
    trusted_path,
)
from safeport.context_server.mcp_clients.install import (
    Listed,
    Setup,
    check,
    entry_differences,
    leftover_problems,
    listing,
)

ASKABLE = {"claude-code": "claude", "codex": "codex"}


@dataclass(frozen=True)
class Verdict:
    problems: tuple[str, ...]
    how: str  # which was done: the client asked, or its file read back (and why)


def verify(setup: Setup) -> Verdict:
    """Ask the client's CLI when it is installed; read the file back when it is not, or when
    the CLI itself fails (each says which)."""
    program = client_program(setup.client, setup.env, setup.roots)
    if program is None:
        why = f" ({ASKABLE[setup.client]} is not on PATH)" if setup.client in ASKABLE else ""
        return Verdict(tuple(check(setup)), f"read {setup.target.path} back{why}")
    env = {**setup.env, "HOME": str(setup.home), "PATH": trusted_path(setup.env, setup.roots)}
    answer = ask_client(setup.client, program, folder=setup.roots[0], env=env)
    if answer.error is not None:
        how = f"read {setup.target.path} back (`{answer.asked}` failed: {answer.error})"
        return Verdict(tuple(check(setup)), how)
    problems = leftover_problems(setup) + answer_problems(setup, answer)
    # The CLI's report can be ambiguous (Claude Code joins args with spaces); the file the
    # entry was written to is read back too, and what it adds is reported.
    problems += [problem for problem in check(setup) if problem not in problems]
    return Verdict(tuple(problems), f"asked `{answer.asked}` in {setup.roots[0]}")


def answer_problems(setup: Setup, answer: ClientAnswer) -> list[str]:
    """How the client's answer falls short of this installation's entry, as sentences."""
    name = "Claude Code" if setup.client == "claude-code" else setup.client.capitalize()
    if answer.entry is None:
        said = f": {answer.issue}" if answer.issue else ""
        return [f"{name} has no `safeport` server when started in {setup.roots[0]}{said}"]
    problems: list[str] = []
    if answer.scope is not None and answer.scope != setup.scope:
        problems.append(
            f"{name} runs its {answer.scope}-scope entry here, not the {setup.scope}-scope one"
        )
    problems += entry_differences(as_entry(answer.entry, setup.entry), setup.entry)
    if answer.status is not None and not _connected(answer.status):
        detail = f" ({answer.issue})" if answer.issue else ""
        problems.append(f"{name} says {answer.status}{detail}")
    elif answer.status is None and answer.issue:
        problems.append(f"{name} says: {answer.issue}")
    return problems


def verify_listed(root: Path, **where: Any) -> list[tuple[Listed, Verdict]]:
    """`sp client list --check` and `sp doctor`: each client with a CLI here and an entry for
    ``root``, asked about the entry it lists first (Claude Code's local scope comes first, as
    it wins there), for the profile and roots that entry names."""
    found: list[tuple[Listed, Verdict]] = []
    asked: set[str] = set()
    for item in listing(root, **where):
        if item.client not in ASKABLE or item.summary is None or item.client in asked:
            continue
        asked.add(item.client)
        roots = tuple(Path(r) for r in item.summary.roots) or (root,)
        setup = Setup(item.client, roots, profile=item.summary.profile or "reader",
                      scope=item.scope or "local", **where)  # type: ignore[arg-type]  # fmt: skip
        found.append((item, verify(setup)))
    return found


def _connected(status: str) -> bool:
    """Claude Code's health line says ``✔ Connected`` when it could start the server."""
    return status.split()[-1:] == ["Connected"] and "not" not in status.lower()
