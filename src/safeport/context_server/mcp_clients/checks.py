"""What `sp doctor` and `sp status` say about the MCP clients' entries for safeport in a project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from safeport.context_server.mcp_clients.install import Listed, listing
from safeport.context_server.mcp_clients.verify import verify_listed
from safeport.shared.findings import Finding


def client_findings(project: Path, *, ask: bool = True, **where: Any) -> Iterator[Finding]:
    """One finding per client with a safeport entry; a broken one comes with the reinstall.
    Claude Code and Codex are asked themselves when their CLI is installed (``ask``), and each
    finding says whether the client was asked or its file read. ``where`` is
    :func:`listing`'s (the home, environment and platform to read for)."""
    asked = verify_listed(project, **where) if ask else []
    verdicts = {(item.client, item.scope): verdict for item, verdict in asked}
    for item in listing(project, **where):
        if item.summary is None and not item.problems:
            continue
        name = f"client {item.client}" + (f" ({item.scope})" if item.scope else "")
        verdict = verdicts.get((item.client, item.scope))
        problems = verdict.problems if verdict is not None else item.problems
        how = f"; {verdict.how}" if verdict is not None else ""
        if problems:
            flag = f" --scope {item.scope}" if item.scope else ""
            yield Finding(name, "fail", "; ".join(problems) + how,
                          f"sp client install {item.client}{flag} --replace")  # fmt: skip
        else:
            yield Finding(name, "ok", f"set up in {item.path}{how}")


def client_overview(project: Path, **where: Any) -> list[dict[str, Any]]:
    """`sp status`'s lines on the clients: each entry there is, with what differs from ours."""
    return [_client(item) for item in listing(project, **where) if item.summary is not None]


def _client(item: Listed) -> dict[str, Any]:
    assert item.summary is not None
    return {
        "client": item.client,
        "scope": item.scope,
        "path": str(item.path),
        "profile": item.summary.profile,
        "ok": not item.problems,
        "problems": list(item.problems),
    }
