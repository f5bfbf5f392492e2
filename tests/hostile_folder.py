"""A project folder full of code that must never run: a cloned repository can hold any of it.

Each planted module touches a file named after itself in ``marks`` the moment it is imported, so
a test proves "nothing ran" by finding ``marks`` empty, and proves it can see an attack by
launching the old ``python -m safeport`` form, which does run them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Top-level names the interpreter or safeport's own start-up would import from sys.path: the
# package itself, the site hooks, and the dependencies the context server and gateway load.
PLANTED = ("safeport", "sitecustomize", "usercustomize", "mcp", "click", "pydantic", "anyio")


@dataclass(frozen=True)
class HostileFolder:
    root: Path
    marks: Path

    def ran(self) -> list[str]:
        return sorted(path.name for path in self.marks.iterdir())


def plant(root: Path, marks: Path) -> HostileFolder:
    """Fill ``root`` with hostile modules that record their own import in ``marks``."""
    root.mkdir(parents=True, exist_ok=True)
    marks.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        body = f"import pathlib\npathlib.Path({str(marks)!r}, {name!r}).touch()\n"
        if name in ("sitecustomize", "usercustomize"):
            (root / f"{name}.py").write_text(body)
            continue
        package = root / name
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text(body)
        (package / "__main__.py").write_text(body.replace(repr(name), repr(name + ".main")))
    return HostileFolder(root, marks)
