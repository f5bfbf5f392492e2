"""`sp help environment` lists every variable the code reads about itself: the source is read
for each lookup (``os.environ[...]``, ``.get(...)``, ``getenv(...)``, the XDG helper and the
``*_VARIABLE`` constants) and each name found must be in the table."""

from __future__ import annotations

import ast
from pathlib import Path

from safeport.shared.environment import NAMES, environment_lines

SRC = Path(__file__).resolve().parents[2] / "src" / "safeport"
# These read another process's environment (a requester's), handed to them as a mapping: they
# judge what that process runs and are no setting of safeport's.
OTHER_PROCESSES = {"action_gateway/identity/python_startup.py"}
_ENV_NAMES = {"environ", "env", "environment"}


def variables_read(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_env(node.value):
            found |= _names(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            looked_up = (
                isinstance(func, ast.Attribute) and func.attr == "get" and _is_env(func.value)
            )
            if looked_up or _called(func) == "getenv":
                found |= _names(node.args[0])
            elif _called(func) == "_xdg" and len(node.args) > 1:
                found |= _names(node.args[1])
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith(("_VARIABLE", "_VARIABLES"))
            for t in node.targets
        ):
            found |= _names(node.value)
    return found


def _is_env(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id in _ENV_NAMES) or (
        isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES
    )


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _names(node: ast.expr) -> set[str]:
    """The variable names a lookup's argument holds: a string, or a tuple of strings (a
    constant's name is followed by its assignment, which is read as an assignment)."""
    values = node.elts if isinstance(node, ast.Tuple) else [node]
    return {
        value.value
        for value in values
        if isinstance(value, ast.Constant) and isinstance(value.value, str)
        and value.value.isupper()
    }  # fmt: skip


def read_in_source() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in OTHER_PROCESSES:
            continue
        for name in variables_read(ast.parse(path.read_text())):
            where.setdefault(name, []).append(relative)
    return where


def test_every_variable_the_code_reads_is_listed() -> None:
    missing = {name: files for name, files in read_in_source().items() if name not in NAMES}
    assert missing == {}


def test_the_known_variables_are_found_by_the_scan() -> None:
    found = read_in_source()
    for name in ("SAFEPORT_HOME", "SAFEPORT_GATEWAY", "SAFEPORT_SECURITY_KEY_SOCKET",
                 "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "CODEX_HOME", "SUDO_USER"):  # fmt: skip
        assert name in found, name


def test_the_scan_sees_each_way_of_reading_a_variable() -> None:
    source = """
import os
a = os.environ["ONE"]
b = os.environ.get("TWO", "")
c = os.getenv("THREE")
def f(env): return env.get("FOUR") or env["FIVE"]
d = _xdg(env, "SIX", home)
NEW_VARIABLE = "SEVEN"
LOCATION_VARIABLES = ("EIGHT", "NINE")
not_env = {"TEN": 1}.get("TEN")
"""
    assert variables_read(ast.parse(source)) == {
        "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE",
    }  # fmt: skip


def test_sp_help_environment_prints_every_variable() -> None:
    text = "\n".join(environment_lines())
    for name in NAMES:
        assert f"\n{name}\n" in text, name


def test_the_cli_reference_lists_every_variable() -> None:
    reference = (SRC.parents[1] / "docs" / "reference" / "cli.md").read_text()
    for name in NAMES:
        assert f"`{name}`" in reference, name
