"""The dependency edges between packages (docs/architecture.md): the context server can never
reach a credential."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_nodes(tree: ast.AST, *, type_checking: bool) -> Iterator[ast.AST]:
    """Every node, or every node but the bodies of ``if TYPE_CHECKING:`` (imports only the type
    checker runs) when ``type_checking`` is False."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if (
            not type_checking
            and isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _graph(src: Path = SRC, *, type_checking: bool = True) -> dict[str, set[str]]:
    """Each safeport module and the safeport modules it imports, lazy imports inside functions
    included (``from package import module`` names the module).

    An import under ``if TYPE_CHECKING:`` is an edge too: the reader of a module must read what
    it names, so a circle through one is a circle at file level all the same. Only the question
    of what importing a module *runs* (:func:`_loads`) leaves them out (``type_checking=False``).
    """
    paths = {_module_name(path, src): path for path in (src / "safeport").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _import_nodes(tree, type_checking=type_checking):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                    if node.level > 1:
                        base = base.rsplit(".", node.level - 1)[0]
                    module = f"{base}.{module}" if module else base
                submodules = {f"{module}.{alias.name}" for alias in node.names} & set(paths)
                targets.update(submodules)
                if len(submodules) < len(node.names):
                    # A name the package's __init__ binds: the import runs that __init__. (Only
                    # submodules named, the package is loaded as any submodule's parent is,
                    # which is not an edge of its own.)
                    targets.add(module)
        graph[name] = {t for t in targets if t in paths and t != name}
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
    # The package itself: `python -m safeport` runs the CLI.
    "safeport": {"safeport", "cli"},
    "errors": set(),
    "shared": {"shared", "errors"},
    "context_server": {"context_server", "shared", "errors", "safeport"},
    "vault": {"vault", "shared", "errors", "safeport"},
    "action_gateway": {"action_gateway", "vault", "shared", "errors", "safeport"},
    # `sp`'s side of a running gateway: it may read the gateway's policy, identity and executor
    # helpers, never the reverse (nothing that runs with the keys imports the client).
    "gateway_client": {"gateway_client", "action_gateway", "vault", "shared", "errors", "safeport"},
    # The demo drives everything through `sp` subprocesses and MCP; it imports no credentialed code.
    "demo": {"demo", "shared", "errors", "safeport"},
    # Writing policies (reference, example, scaffolds, OpenAPI import): only the CLI imports it.
    "authoring": {"authoring", "action_gateway", "shared", "errors", "safeport"},
    "cli": {
        "authoring",
        "cli",
        "context_server",
        "action_gateway",
        "gateway_client",
        "vault",
        "demo",
        "shared",
        "errors",
        "safeport",
    },
}


def edge_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import across components that ALLOWED does not list, and each component it omits
    (a new package is checked from its first module, never skipped)."""
    bad = []
    for module, targets in sorted(graph.items()):
        component = _component(module)
        if component not in ALLOWED:
            bad.append(f"{module}: component {component!r} has no entry in ALLOWED")
            continue
        for target in sorted(targets):
            if _component(target) not in ALLOWED[component]:
                bad.append(f"{module} -> {target}")
    return bad


def test_every_direct_import_follows_the_allowed_edges() -> None:
    assert edge_violations(_graph()) == []


def test_the_edge_check_sees_an_unlisted_component() -> None:
    graph = {"safeport.plugins.x": {"safeport.vault.store"}, "safeport.vault.store": set()}
    assert edge_violations(graph) == [
        "safeport.plugins.x: component 'plugins' has no entry in ALLOWED"
    ]


def stale_names(graph: dict[str, set[str]]) -> list[str]:
    """Each component, room or module the checks in this file name that no longer exists: a
    check that names only what is gone would pass by checking nothing."""

    def present(name: str) -> bool:
        return any(m == name or m.startswith(name + ".") for m in graph)

    names = [f"safeport.{component}" for component in ALLOWED if component != "safeport"]
    names += [
        f"safeport.{component}.{room}"
        for component, levels in ROOM_ORDER.items()
        for rooms in levels
        for room in rooms
    ]
    names += [f"safeport.action_gateway.{room}" for room in GATEWAY_SERVER_SIDE_ROOMS]
    names += [f"safeport.action_gateway.{room}" for room in GATEWAY_ENTRY_POINTS]
    names += sorted(GATEWAY_CREDENTIALED | DECISION_MODULES | {HOST_KEY_SCAN})
    return [name for name in names if not present(name)]


def test_every_name_these_checks_list_still_exists() -> None:
    assert stale_names(_graph()) == []


def test_a_listed_name_that_no_longer_exists_is_reported() -> None:
    graph = _graph()
    graph.pop("safeport.action_gateway.ladder.result_filters")
    assert stale_names(graph) == ["safeport.action_gateway.ladder.result_filters"]


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


# What the CLI drives outside `sp gateway run` (sp's client side, and the gateway rooms the
# gateway's __all__ lists apart from the daemon and the executors) never loads the gateway's
# server side or a credentialed executor: `sp policy check`, `sp gateway install` or talking to a
# running gateway stay light, and cannot act. The entry points that start the gateway load it all.
GATEWAY_ENTRY_POINTS = {"daemon", "executors"}
GATEWAY_SERVER_SIDE_ROOMS = ("approvals", "core", "daemon", "handlers", "ladder", "sockets")
# Run by `sp` to pin a host key before any gateway exists.
HOST_KEY_SCAN = "safeport.action_gateway.executors.ssh.host_key_scan"
GATEWAY_CREDENTIALED = {
    "safeport.action_gateway.executors.gateway_executor",
    "safeport.action_gateway.executors.https.client",
    "safeport.action_gateway.executors.openbao.client",
    "safeport.action_gateway.executors.ssh.pool",
}


def _server_side(module: str) -> bool:
    rooms = tuple(f"safeport.action_gateway.{room}" for room in GATEWAY_SERVER_SIDE_ROOMS)
    return module in GATEWAY_CREDENTIALED or any(
        module == room or module.startswith(room + ".") for room in rooms
    )


def _server_side_reached(graph: dict[str, set[str]], modules: set[str]) -> list[str]:
    return sorted(
        f"{module} loads {reached}"
        for module in modules
        for reached in _loads(graph, module)
        if _server_side(reached)
    )


def test_what_the_cli_drives_outside_the_daemon_never_loads_the_gateways_server_side() -> None:
    # What runs on import: a type-only import loads nothing.
    graph = _graph(type_checking=False)
    rooms = _declared_all("safeport.action_gateway") - GATEWAY_ENTRY_POINTS
    modules = {
        module
        for module in graph
        if module.startswith("safeport.gateway_client")
        or any(module.startswith(f"safeport.action_gateway.{room}") for room in rooms)
    }
    modules.add(HOST_KEY_SCAN)
    assert "safeport.action_gateway.policy.review" in modules  # not vacuous
    assert "safeport.gateway_client.control_socket" in modules
    assert _server_side_reached(graph, modules) == []


def test_the_server_side_check_sees_a_client_module_that_loads_the_core() -> None:
    graph = {
        "safeport.gateway_client": set(),
        "safeport.gateway_client.control_socket": {"safeport.action_gateway.policy.check"},
        "safeport.action_gateway.policy.check": {"safeport.action_gateway.core.gateway_core"},
        "safeport.action_gateway.core.gateway_core": set(),
    }
    assert _server_side_reached(graph, {"safeport.gateway_client.control_socket"}) == [
        "safeport.gateway_client.control_socket loads safeport.action_gateway.core.gateway_core"
    ]


# Inside a component, the rooms import in one direction: a room may import only rooms to its
# left (bottom first); rooms in one tuple are side by side and import none of each other.
ROOM_ORDER = {
    "action_gateway": [
        ("identity", "evidence", "install"),
        ("policy",),
        ("sockets",),
        ("executors",),
        ("oauth",),
        ("approvals",),
        ("remote_clients",),
        ("ladder",),
        ("core",),
        ("handlers",),
        ("daemon",),
    ],
    "context_server": [
        # sdk_seam: the MCP SDK's private surface, which tools/ and transport/ both use.
        ("policy", "mcp_clients", "gateway_link", "sdk_seam"),
        ("workspace",),
        ("index",),
        ("operations",),
        ("tools",),
        ("transport",),
        ("http",),
        ("server",),
        # shell_call: `sp context call`, an MCP client of the server it starts as a process.
        ("shell_call",),
        ("__main__",),
    ],
}


def _room(module: str) -> tuple[str, str] | None:
    parts = module.split(".")
    if len(parts) < 3 or parts[1] not in ROOM_ORDER:
        return None
    return parts[1], parts[2]


def room_order_violations(graph: dict[str, set[str]]) -> list[str]:
    """Each import that goes sideways or up the room order, and each room the order omits."""
    tier = {
        (component, room): level
        for component, levels in ROOM_ORDER.items()
        for level, rooms in enumerate(levels)
        for room in rooms
    }
    found = []
    for module, targets in graph.items():
        here = _room(module)
        if here is None:
            continue
        if here not in tier:
            found.append(f"{module}: room {here[1]!r} has no place in ROOM_ORDER")
            continue
        for target in targets:
            there = _room(target)
            if there is None or there[0] != here[0] or there == here:
                continue
            if there not in tier or tier[there] >= tier[here]:
                found.append(f"{module} -> {target}")
    return sorted(found)


def test_rooms_import_in_one_direction() -> None:
    graph = _graph()
    assert any(m.startswith("safeport.action_gateway.ladder.") for m in graph)  # not vacuous
    assert room_order_violations(graph) == []


def test_the_room_order_check_sees_an_upward_import_and_an_unplaced_room() -> None:
    graph = {
        "safeport.action_gateway.policy.store": {"safeport.action_gateway.core.state"},
        "safeport.action_gateway.core.state": {"safeport.action_gateway.policy.store"},
        "safeport.action_gateway.attic.old": set(),
    }
    assert room_order_violations(graph) == [
        "safeport.action_gateway.attic.old: room 'attic' has no place in ROOM_ORDER",
        "safeport.action_gateway.policy.store -> safeport.action_gateway.core.state",
    ]


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:
        # Iterative, so a long import chain never meets the recursion limit.
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_no_module_imports_itself_through_others_type_only_and_lazy_imports_included() -> None:
    assert import_cycles(_graph()) == []


def _two_module_vault(tmp_path: Path, unlocked: str) -> Path:
    package = tmp_path / "safeport" / "vault"
    package.mkdir(parents=True, exist_ok=True)
    (tmp_path / "safeport" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "store.py").write_text("from safeport.vault.unlocked import OpenVault\n")
    (package / "unlocked.py").write_text(unlocked)
    return tmp_path


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function_or_behind_type_checking(
    tmp_path: Path,
) -> None:
    cycle = [["safeport.vault.store", "safeport.vault.unlocked"]]
    hidden = [
        "def f():\n    from safeport.vault import store\n",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from safeport.vault.store import VaultFile\n",
        "import typing\nif typing.TYPE_CHECKING:\n    from safeport.vault import store\n",
        "from typing import TYPE_CHECKING\n"
        "if not TYPE_CHECKING:\n    pass\nelse:\n    from safeport.vault.store import VaultFile\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .store import VaultFile\n",
    ]
    for text in hidden:
        assert import_cycles(_graph(_two_module_vault(tmp_path, text))) == cycle, text
    # Without the way back there is no circle: the check does not report every import.
    alone = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from safeport import vault\n"
    assert import_cycles(_graph(_two_module_vault(tmp_path, alone))) == []


def test_what_an_import_runs_leaves_out_type_only_imports(tmp_path: Path) -> None:
    text = "import typing\nif typing.TYPE_CHECKING:\n    from safeport.vault import store\n"
    src = _two_module_vault(tmp_path, text)
    assert "safeport.vault.store" in _graph(src)["safeport.vault.unlocked"]
    assert "safeport.vault.store" not in _graph(src, type_checking=False)["safeport.vault.unlocked"]


# Decision code does no I/O (pure decision code is tested exhaustively and fast; the I/O edges
# are tested against real parts).
DECISION_MODULES = {
    f"safeport.{name}"
    for name in (
        "action_gateway.approvals.approver_rules",
        "action_gateway.approvals.cards",
        "action_gateway.executors.https.address_policy",
        "shared.known_secrets.dumps",
        "shared.known_secrets.shortening",
        "shared.known_secrets.views",
        "action_gateway.executors.https.response_contract",
        "action_gateway.executors.interface",
        "action_gateway.executors.prepare",
        "action_gateway.executors.sql.role",
        "action_gateway.executors.ssh.command",
        "action_gateway.ladder.collaborators",
        "action_gateway.ladder.outcome",
        "action_gateway.ladder.refusal",
        "action_gateway.ladder.result_filters",
        "action_gateway.oauth.endpoints",
        "action_gateway.oauth.errors",
        "action_gateway.oauth.presets",
        "action_gateway.oauth.protocol",
        "action_gateway.oauth.refresh_rules",
        "action_gateway.oauth.responses",
        "action_gateway.policy.arguments",
        "action_gateway.policy.caller_rules",
        "action_gateway.policy.directions",
        "action_gateway.policy.meaning",
        "action_gateway.policy.meaning_rules",
        "action_gateway.policy.rate_limits",
        "action_gateway.policy.review",
        "action_gateway.policy.shares",
        "action_gateway.policy.words",
        "context_server.operations.excerpt",
        "context_server.operations.tool_results",
        "context_server.policy.private_names",
        "context_server.policy.private_tables",
        "context_server.policy.public_material",
        "context_server.policy.read_policy",
        "context_server.policy.readable_tables",
        "context_server.policy.request_path",
        "context_server.policy.scope",
        "shared.audit.record",
        "shared.jsonc",
        "shared.schemas.audit",
        "shared.schemas.catalog",
        "shared.schemas.config",
        "shared.schemas.config_audit",
        "shared.schemas.config_credential",
        "shared.schemas.config_gateway",
        "shared.schemas.config_oauth",
        "shared.schemas.config_problems",
        "shared.schemas.config_sql",
        "shared.schemas.control",
        "shared.schemas.replies",
        "shared.schemas.wire",
        "shared.secret_scan.assignments",
        "shared.secret_scan.checks",
        "shared.secret_scan.prefilter",
        "shared.secret_scan.private_keys",
        "shared.secret_scan.providers.rules",
        "shared.secret_scan.redaction",
        "shared.secret_scan.scanner",
        "shared.secret_scan.spans",
        "shared.sql_statement",
        "shared.text_lines",
        "shared.visible_text",
        "vault.backing_file",
        "vault.canonical_json",
        "vault.checkpoints",
        "vault.credentials",
        "vault.format",
        "vault.interface",
        "vault.passphrase",
        "vault.payload",
        "vault.signed_note",
        "vault.timestamp_check",
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
    "pysqlite3",
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
    # Every listed module is read: a name that moved fails here (and in stale_names), it is
    # never skipped.
    paths = {m: SRC.joinpath(*m.split(".")).with_suffix(".py") for m in DECISION_MODULES}
    assert sorted(m for m, path in paths.items() if not path.is_file()) == []
    found = {m: _io_imports(path) for m, path in paths.items()}
    assert {m: io for m, io in found.items() if io} == {}


def test_the_io_check_sees_a_socket_or_os_import(tmp_path: Path) -> None:
    module = tmp_path / "decision.py"
    module.write_text(
        "import re\nfrom os import path\nimport socket\nfrom urllib.parse import quote\n"
    )
    assert _io_imports(module) == ["os", "socket"]
