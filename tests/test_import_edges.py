"""The dependency edges between packages (docs/architecture.md): the context server can never
reach a credential."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in (SRC / "safeport").rglob("*.py"):
        name = _module_name(path)
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.rsplit(".", node.level - (1 if path.name == "__init__.py" else 0))[
                        0
                    ]
                    module = f"{base}.{node.module}" if node.module else base
                else:
                    module = node.module or ""
                targets.add(module)
                targets.update(f"{module}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t == "safeport" or t.startswith("safeport.")}
    return graph


def _component(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[1].startswith("__"):
        return "safeport"  # the package itself (__version__, __main__)
    return parts[1]


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [m for m in graph if m == start or m.startswith(start + ".")]
    while stack:
        module = stack.pop()
        if module in seen:
            continue
        seen.add(module)
        stack.extend(t for t in graph.get(module, ()) if t in graph)
    return seen


ALLOWED = {
    "errors": set(),
    "shared": {"shared", "errors"},
    "context_server": {"context_server", "shared", "errors", "safeport"},
    "vault": {"vault", "shared", "errors", "safeport"},
    "action_gateway": {"action_gateway", "vault", "shared", "errors", "safeport"},
    # The demo drives everything through `sp` subprocesses and MCP; it imports no credentialed code.
    "demo": {"demo", "shared", "errors", "safeport"},
    "cli": {
        "cli",
        "context_server",
        "action_gateway",
        "vault",
        "demo",
        "shared",
        "errors",
        "safeport",
    },
}


def test_every_direct_import_follows_the_allowed_edges() -> None:
    graph = _graph()
    bad = []
    for module, targets in graph.items():
        component = _component(module)
        if component not in ALLOWED:
            continue
        for target in targets:
            if _component(target) not in ALLOWED[component]:
                bad.append(f"{module} -> {target}")
    assert bad == []


def test_the_context_server_cannot_reach_the_vault_or_the_gateway_even_indirectly() -> None:
    reached = {_component(m) for m in _reachable(_graph(), "safeport.context_server")}
    assert not reached & {"vault", "action_gateway", "cli"}


def test_the_edge_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    # Guard the guard: a module that imports the vault is reported as reaching it.
    graph = {"safeport.context_server.x": {"safeport.vault.store"}, "safeport.vault.store": set()}
    assert "safeport.vault.store" in _reachable(graph, "safeport.context_server")
