"""Across components, src/ imports only what a package declares in its ``__all__``.

A package's ``__all__`` names what other components may import from it: names its
``__init__`` binds (``from safeport.vault import VaultFile``) and public modules
(``from safeport.shared.wire import recv_message``), listed where loading the whole package for
one of them would be wrong (the CLI must not load the gateway's executors to review a policy).
Every step below a component must be listed: ``safeport.shared.schemas.config`` needs
``schemas`` in ``safeport.shared`` and ``config`` in ``safeport.shared.schemas``. Inside a
component, modules import each other freely; the component edges are test_import_edges.py's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module
    module: str  # the module the statement names, resolved
    names: tuple[str, ...]  # what ``from module import ...`` takes; empty for ``import module``
    line: int


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(src: Path) -> list[Import]:
    """Every import of safeport code in the tree under ``src``, relative ones resolved."""
    found = []
    for path in sorted((src / "safeport").rglob("*.py")):
        importer = module_name(path, src)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [Import(importer, alias.name, (), node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    package = importer if path.name == "__init__.py" else importer.rsplit(".", 1)[0]
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    module = f"{base}.{module}" if module else base
                names = tuple(alias.name for alias in node.names)
                found.append(Import(importer, module, names, node.lineno))
    return [i for i in found if i.module == "safeport" or i.module.startswith("safeport.")]


def surfaces(src: Path) -> dict[str, frozenset[str] | None]:
    """Each package's ``__all__`` as written (None: the package declares none)."""
    declared: dict[str, frozenset[str] | None] = {}
    for init in sorted((src / "safeport").rglob("__init__.py")):
        names: frozenset[str] | None = None
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                value = ast.literal_eval(node.value)
                names = frozenset(str(name) for name in value)
        declared[module_name(init, src)] = names
    return declared


def component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and not parts[1].startswith("__") else "safeport"


def violations(found: list[Import], declared: dict[str, frozenset[str] | None]) -> list[str]:
    problems = []
    for imp in found:
        if component(imp.module) == component(imp.importer):
            continue
        where = f"{imp.importer}:{imp.line} imports {imp.module}"
        parts = imp.module.split(".")
        # The component itself is reached by its name (test_import_edges.py decides which may
        # be); every package below it must list the next step.
        for depth in range(2, len(parts)):
            parent = ".".join(parts[:depth])
            listed = declared.get(parent)
            if listed is None:
                problems.append(f"{where}: {parent} declares no __all__")
                break
            if parts[depth] not in listed:
                problems.append(f"{where}: {parent}.__all__ does not list {parts[depth]}")
                break
        else:
            if imp.module in declared:  # a package: each name must be on its surface
                listed = declared[imp.module]
                if listed is None:
                    problems.append(f"{where}: {imp.module} declares no __all__")
                    continue
                problems += [
                    f"{where}: {imp.module}.__all__ does not list {name}"
                    for name in imp.names
                    if name not in listed
                ]
            else:  # a public module, or a component that is one module: no private names
                problems += [
                    f"{where}: {name} is private"
                    for name in imp.names
                    if name.startswith("_") and name != "__version__"
                ]
    return problems


def test_every_package_declares_what_other_packages_may_import() -> None:
    assert [name for name, listed in surfaces(SRC).items() if listed is None] == []


def test_imports_across_components_go_through_declared_surfaces() -> None:
    assert violations(imports(SRC), surfaces(SRC)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "safeport" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_surface_check_refuses_private_modules_and_undeclared_names(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": "__all__ = []\n",
            "vault/__init__.py": '__all__ = ["VaultFile", "secrets"]\n',
            "vault/store.py": "",
            "vault/secrets.py": "",
            "cli/__init__.py": "__all__ = []\n",
            "cli/vault.py": (
                "from safeport.vault.store import VaultFile\n"
                "from safeport.vault import VaultFile, derive_key\n"
                "from safeport.vault.secrets import SecretBytes, _Buffer\n"
                "import safeport.vault.store\n"
            ),
            "shared/__init__.py": '"""no surface"""\n',
            "shared/wire.py": "",
            "context_server/__init__.py": "__all__ = []\n",
            "context_server/link.py": "from safeport.shared.wire import send_message\n",
        },
    )
    assert violations(imports(src), surfaces(src)) == [
        "safeport.cli.vault:1 imports safeport.vault.store: "
        "safeport.vault.__all__ does not list store",
        "safeport.cli.vault:2 imports safeport.vault: "
        "safeport.vault.__all__ does not list derive_key",
        "safeport.cli.vault:3 imports safeport.vault.secrets: _Buffer is private",
        "safeport.cli.vault:4 imports safeport.vault.store: "
        "safeport.vault.__all__ does not list store",
        "safeport.context_server.link:1 imports safeport.shared.wire: "
        "safeport.shared declares no __all__",
    ]


def test_the_surface_check_admits_declared_names_listed_modules_and_own_modules(
    tmp_path: Path,
) -> None:
    src = _tree(
        tmp_path,
        {
            "__init__.py": '__all__ = ["__version__"]\n',
            "errors.py": "",
            "shared/__init__.py": '__all__ = ["schemas", "wire"]\n',
            "shared/wire.py": "",
            "shared/schemas/__init__.py": '__all__ = ["config"]\n',
            "shared/schemas/config.py": "",
            "vault/__init__.py": '__all__ = ["VaultFile"]\n',
            "vault/store.py": "from safeport.vault.files import _private_helper\n",
            "vault/files.py": "from . import store\nfrom .store import thing\n",
            "cli/__init__.py": '__all__ = ["main"]\n',
            "cli/app.py": (
                "import safeport\n"
                "from safeport import __version__\n"
                "from safeport.errors import Error\n"
                "from safeport.shared import wire\n"
                "from safeport.shared.schemas.config import GatewayPolicy\n"
                "from safeport.vault import VaultFile\n"
            ),
        },
    )
    assert violations(imports(src), surfaces(src)) == []
