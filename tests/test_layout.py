"""Test folders mirror the packages of src/safeport, so a package's tests are found beside its
name: whoever changes ``action_gateway/ladder/resolve.py`` finds its tests in
``tests/action_gateway/ladder/``.

A test file lives in the folder of the package it tests. It shows which package that is by
importing a module of the package (or of a package inside it), or by naming one as a string: a
``python -m safeport.x`` argv, or, for a test that drives only real processes through the harness,
a module-level ``SUBJECT = "safeport.x.y"``. Either way the name must be a module that exists, so a
renamed or moved package fails here until its tests follow it.

A folder of rooms (a package holding nothing but its ``__init__.py``, like ``action_gateway``)
tests no code of its own: only the few end-to-end tests that check several rooms at once live
there, each named in CROSS_ROOM.

Mirroring no package: the fitness tests at the root of tests/ (this file among them), the drills
(the gateway killed, flooded and fed fuzzed files, context servers under load) and
tests/benchmarks (the short profiles of benchmarks/). Helper modules (not ``test_*.py``) live
beside the tests that use them, in any of these folders; the harness is outside tests/."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WHOLE_SYSTEM = {("drills",), ("benchmarks",)}

# Tests that check several rooms at once, through real gateway processes: each lives in the folder
# of rooms that holds all the rooms it checks.
CROSS_ROOM = frozenset(
    {
        # A working session through the agent profile: reads, a session grant, per-call writes.
        "action_gateway/test_realistic_session_e2e.py",
        # Two humans on one dedicated gateway: cards, sessions and stops per uid.
        "action_gateway/test_several_humans_e2e.py",
    }
)

_MODULE_NAME = re.compile(r"safeport(\.\w+)+")


def unmirrored(tests: Path, src: Path) -> list[str]:
    """Test folders with no package of the same path under ``src``."""
    found = []
    for init in sorted(tests.rglob("__init__.py")):
        folder = init.parent.relative_to(tests).parts
        if (
            folder
            and folder not in WHOLE_SYSTEM
            and not (src.joinpath(*folder) / "__init__.py").is_file()
        ):
            found.append("/".join(folder))
    return found


def _is_module(src: Path, name: str) -> bool:
    """``name`` (``safeport.a.b``) is a module or a package under ``src`` (the safeport folder)."""
    place = src.joinpath(*name.split(".")[1:])
    return place.with_suffix(".py").is_file() or (place / "__init__.py").is_file()


def named_modules(source: str, src: Path) -> Iterator[str]:
    """Every existing safeport module the source imports (at any depth, ``TYPE_CHECKING`` too)
    or names as a whole string."""
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [node.value] if _MODULE_NAME.fullmatch(node.value) else []
        yield from (n for n in names if n.split(".")[0] == "safeport" and _is_module(src, n))


def misplaced(tests: Path, src: Path, cross_room: frozenset[str]) -> list[str]:
    """Test files whose folder does not hold what they test, and CROSS_ROOM entries that name no
    test file (each problem as one line)."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        folder = relative.parent.parts
        if relative.as_posix() in cross_room:
            cross_room -= {relative.as_posix()}
            continue
        if not folder or folder[:1] in WHOLE_SYSTEM:
            continue
        package = src.joinpath(*folder)
        if not (package / "__init__.py").is_file():
            found.append(f"{relative.as_posix()}: no package safeport/{'/'.join(folder)}")
            continue
        if not any(p.name != "__init__.py" for p in package.glob("*.py")):
            found.append(f"{relative.as_posix()}: a folder of rooms, and not in CROSS_ROOM")
            continue
        room = ".".join(("safeport", *folder))
        names = set(named_modules(path.read_text(encoding="utf-8"), src))
        if not any(n == room or n.startswith(room + ".") for n in names):
            found.append(f"{relative.as_posix()}: imports or names nothing in {room}")
    # What is left of the list named no test file that was found.
    found += [f"{entry}: in CROSS_ROOM, no such test" for entry in cross_room]
    return sorted(found)


def test_every_test_folder_mirrors_a_package() -> None:
    assert unmirrored(REPO / "tests", REPO / "src" / "safeport") == []


def test_every_test_file_lives_with_the_package_it_tests() -> None:
    assert misplaced(REPO / "tests", REPO / "src" / "safeport", CROSS_ROOM) == []


def test_the_cross_room_list_stays_short() -> None:
    # A long list would be a second, flat folder: a test checks one room unless it truly cannot.
    assert len(CROSS_ROOM) <= 5


def test_a_folder_without_its_package_is_reported(tmp_path: Path) -> None:
    for folder in ("tests/vault", "tests/ladder", "src/vault"):
        (tmp_path / folder).mkdir(parents=True)
    for init in ("tests/vault", "tests/ladder", "src/vault"):
        (tmp_path / init / "__init__.py").write_text("")
    assert unmirrored(tmp_path / "tests", tmp_path / "src") == ["ladder"]


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _sample(tmp_path: Path, tests: dict[str, str]) -> list[str]:
    """``misplaced`` over a small src with a vault, and a gateway whose only room is a ladder."""
    src = tmp_path / "src" / "safeport"
    _tree(src, {
        "__init__.py": "", "vault/__init__.py": "", "vault/store.py": "",
        "action_gateway/__init__.py": "", "action_gateway/ladder/__init__.py": "",
        "action_gateway/ladder/resolve.py": "",
    })  # fmt: skip
    _tree(tmp_path / "tests", tests)
    cross = frozenset({"action_gateway/test_whole_e2e.py", "action_gateway/test_gone_e2e.py"})
    return misplaced(tmp_path / "tests", src, cross)


def test_a_test_file_in_another_package_s_folder_is_reported(tmp_path: Path) -> None:
    found = _sample(tmp_path, {
        # Tests the ladder from the vault's folder: the case this check exists for.
        "vault/test_resolve.py": "from safeport.action_gateway.ladder import resolve\n",
        # Imports inside a function and names under `from` count.
        "vault/test_store.py": "def test_x():\n    from safeport.vault import store\n",
        "action_gateway/ladder/test_resolve.py": "import safeport.action_gateway.ladder.resolve\n",
        # A process test names its subject; a name that is no module does not count.
        "action_gateway/ladder/test_ladder_e2e.py": 'SUBJECT = "safeport.action_gateway.ladder"\n',
        "vault/test_stale_e2e.py": 'SUBJECT = "safeport.vault.gone"\n',
        "vault/test_argv_e2e.py": 'ARGV = ["-m", "safeport.vault.store"]\n',
        # A folder of rooms holds only the cross-room list's tests.
        "action_gateway/test_resolve.py": "from safeport.action_gateway.ladder import resolve\n",
        "action_gateway/test_whole_e2e.py": "",
        "ladder/test_resolve.py": "from safeport.action_gateway.ladder import resolve\n",
    })  # fmt: skip
    assert found == [
        "action_gateway/test_gone_e2e.py: in CROSS_ROOM, no such test",
        "action_gateway/test_resolve.py: a folder of rooms, and not in CROSS_ROOM",
        "ladder/test_resolve.py: no package safeport/ladder",
        "vault/test_resolve.py: imports or names nothing in safeport.vault",
        "vault/test_stale_e2e.py: imports or names nothing in safeport.vault",
    ]
