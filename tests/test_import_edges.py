"""The dependency edges between packages (docs/architecture.md): the context server can never
reach a credential."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"


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


def _suite_references(folder: Path) -> list[str]:
    """Each import of the test suite or the benchmarks under ``folder``, and each module path
    string naming them (``python -m tests.x`` in a subprocess is an import too)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value] if node.value.startswith(("tests.", "benchmarks.")) else []
            else:
                continue
            found += [
                f"{path.relative_to(folder)}: {name}"
                for name in names
                if name.split(".")[0] in {"tests", "benchmarks"}
            ]
    return found


def test_the_harness_and_the_benchmarks_never_reach_into_the_test_suite() -> None:
    # Benchmarks and tests share the harness; neither depends on the other's files.
    assert _suite_references(REPO / "harness") == []
    assert [r for r in _suite_references(REPO / "benchmarks") if ": tests" in r] == []


def test_the_suite_reference_check_sees_an_import_and_a_module_string(tmp_path: Path) -> None:
    (tmp_path / "bench_x.py").write_text(
        "from tests.action_gateway.support import Gateway\nARGV = ['-m', 'tests.drills.load']\n"
    )
    assert [r.split(": ")[1] for r in _suite_references(tmp_path)] == [
        "tests.action_gateway.support",
        "tests.drills.load",
    ]


def _parents(module: str) -> list[str]:
    """The packages Python imports before ``module`` itself."""
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def _loads(graph: dict[str, set[str]], module: str) -> set[str]:
    """Every safeport module that importing ``module`` runs (parent packages included)."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        if current in seen or current not in graph:
            continue
        seen.add(current)
        stack.extend(_parents(current))
        stack.extend(graph[current])
    return seen


def _declared_all(package: str) -> set[str]:
    init = SRC.joinpath(*package.split(".")) / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return {str(name) for name in ast.literal_eval(node.value)}
    return set()


# What the CLI drives outside `sp gateway run` (the modules the gateway lists in its __all__,
# and every module added there for the CLI's client side) never loads the gateway's server or a
# credentialed executor: `sp policy check`, `sp gateway install` or talking to a running
# gateway stay light, and cannot act. The entry points that start the gateway load all of it.
GATEWAY_ENTRY_POINTS = {"daemon", "assembly", "executors"}
GATEWAY_SERVER_SIDE = {
    f"safeport.action_gateway.{name}"
    for name in (
        "agent_protocol",
        "approvals",
        "control",
        "core",
        "journals",
        "ladder",
        "server",
        "vault_state",
        "executors.gateway_executor",
        "executors.https",
        "executors.ssh_pool",
    )
}


def _server_side_reached(graph: dict[str, set[str]], modules: set[str]) -> list[str]:
    return sorted(
        f"{module} loads {reached}"
        for module in modules
        for reached in _loads(graph, module) & GATEWAY_SERVER_SIDE
    )


def test_what_the_cli_drives_outside_the_daemon_never_loads_the_gateways_server_side() -> None:
    listed = _declared_all("safeport.action_gateway") - GATEWAY_ENTRY_POINTS
    listed |= {f"executors.{name}" for name in _declared_all("safeport.action_gateway.executors")}
    modules = {f"safeport.action_gateway.{name}" for name in listed}
    graph = _graph()
    assert modules & set(graph) >= {"safeport.action_gateway.policy.review"}  # not vacuous
    assert _server_side_reached(graph, modules & set(graph)) == []


def test_the_server_side_check_sees_a_client_module_that_loads_the_core() -> None:
    graph = {
        "safeport.action_gateway": set(),
        "safeport.gateway_client.control_socket": {"safeport.action_gateway.peer_check"},
        "safeport.action_gateway.peer_check": {"safeport.action_gateway.core.gateway_core"},
        "safeport.action_gateway.core.gateway_core": set(),
    }
    assert _server_side_reached(graph, {"safeport.gateway_client.control_socket"}) == [
        "safeport.gateway_client.control_socket loads safeport.action_gateway.core.gateway_core"
    ]


# Decision code does no I/O (STYLE.md: pure decision code is tested exhaustively and fast; the
# I/O edges are tested against real parts). Names not in the tree yet are the modules this
# round's other changes split out of the ladder, the read policy and the wire contracts; each
# is checked from the moment it lands.
DECISION_MODULES = {
    f"safeport.{name}"
    for name in (
        "action_gateway.approver_rules",
        "action_gateway.arguments",
        "action_gateway.callers",
        "action_gateway.cards",
        "action_gateway.executors.address_policy",
        "action_gateway.executors.credential_echo",
        "action_gateway.executors.interface",
        "action_gateway.executors.prepare",
        "action_gateway.executors.response_contract",
        "action_gateway.executors.ssh_command",
        "action_gateway.policy_meaning",
        "action_gateway.policy_review",
        "action_gateway.rate_limits",
        "action_gateway.refusal",
        "action_gateway.result_filters",
        "context_server.excerpt",
        "context_server.policy",
        "context_server.policy_tables",
        "context_server.private_names",
        "context_server.request_path",
        "context_server.results",
        "shared.audit.record",
        "shared.jsonc",
        "shared.schemas.audit",
        "shared.schemas.catalog",
        "shared.schemas.config",
        "shared.schemas.control",
        "shared.schemas.replies",
        "shared.schemas.wire",
        "shared.text_lines",
        "shared.visible_text",
        "vault.checkpoints",
        "vault.credentials",
        "vault.format",
        "vault.interface",
        "vault.passphrase_strength",
    )
}
IO_MODULES = {
    "asyncio",
    "ctypes",
    "fcntl",
    "http",
    "httpcore",
    "httpx",
    "keyring",
    "mmap",
    "multiprocessing",
    "os",
    "paramiko",
    "psutil",
    "secretstorage",
    "select",
    "selectors",
    "shutil",
    "signal",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "syslog",
    "tempfile",
    "urllib.request",
}


def _io_imports(path: Path) -> list[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return sorted(
        name
        for name in names
        if name in IO_MODULES or name.split(".")[0] in IO_MODULES - {"urllib.request"}
    )


def test_decision_modules_import_nothing_that_does_io() -> None:
    present = {
        m for m in DECISION_MODULES if SRC.joinpath(*m.split(".")).with_suffix(".py").exists()
    }
    assert "safeport.action_gateway.approvals.cards" in present  # not vacuous
    found = {m: _io_imports(SRC.joinpath(*m.split(".")).with_suffix(".py")) for m in present}
    assert {m: io for m, io in found.items() if io} == {}


def test_the_io_check_sees_a_socket_or_os_import(tmp_path: Path) -> None:
    module = tmp_path / "decision.py"
    module.write_text(
        "import re\nfrom os import path\nimport socket\nfrom urllib.parse import quote\n"
    )
    assert _io_imports(module) == ["os", "socket"]
