"""No module in ``src/`` holds more than one job's worth of code, and no function more than one
step's: 360 lines a module, 60 a function.

A module that long is a sign that two jobs share it, and a function that long a sign that it does
several things in a row that each deserve a name. There is no exception for tables of data: a
table that long holds several kinds of thing, and each kind reads better in a module of its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "safeport"
MAX_LINES = 360
MAX_FUNCTION_LINES = 60


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def long_modules(root: Path) -> dict[str, int]:
    """Each module under ``root`` longer than MAX_LINES, and its length."""
    return {
        str(path.relative_to(root)): _lines(path)
        for path in sorted(root.rglob("*.py"))
        if _lines(path) > MAX_LINES
    }


def long_functions(root: Path) -> dict[str, int]:
    """Each function or method under ``root`` longer than MAX_FUNCTION_LINES (from its ``def``
    line to its last line, nested functions counted in the function that holds them), as
    ``module:line name``, and its length."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found[f"{path.relative_to(root)}:{node.lineno} {node.name}"] = length
    return found


def test_every_module_is_at_most_360_lines() -> None:
    assert long_modules(SRC) == {}


def test_every_function_is_at_most_60_lines() -> None:
    assert long_functions(SRC) == {}


def _body(lines: int, indent: int = 4) -> str:
    return "".join(f"{' ' * indent}x{n} = {n}\n" for n in range(lines))


def test_the_size_checks_see_a_long_module_and_a_long_function_or_method(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    # A function of exactly 60 lines and a module of exactly 360 pass: the limits are inclusive.
    (package / "fits.py").write_text(f"def f():\n{_body(59)}" + "\n" * 300)
    assert _lines(package / "fits.py") == MAX_LINES
    (package / "long_method.py").write_text(f"class C:\n    async def m(self):\n{_body(60, 8)}")
    (package / "long_module.py").write_text("x = 1\n" * 361)
    (package / "nested.py").write_text(f"def outer():\n    def inner():\n{_body(61, 8)}")
    assert long_modules(tmp_path) == {"pkg/long_module.py": 361}
    assert long_functions(tmp_path) == {
        "pkg/long_method.py:2 m": 61,
        "pkg/nested.py:1 outer": 63,
        "pkg/nested.py:2 inner": 62,
    }
