"""Each of safeport's errors names the code the gateway answers it with (``wire_code``), and that
code agrees with its exit code: a lock is ``locked``, any other negative verdict (exit 1)
``denied``, everything else ``invalid``. Checked over every Error subclass in the package, so a
new negative verdict that forgets its wire code is answered as it was before it had one."""

from __future__ import annotations

import importlib
import pkgutil

import safeport
from safeport.errors import Error
from safeport.vault import VaultLocked


def _every_error_class() -> set[type[Error]]:
    for module in pkgutil.walk_packages(safeport.__path__, "safeport."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: set[type[Error]] = set()
    todo: list[type[Error]] = [Error]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_errors_wire_code_agrees_with_its_exit_code() -> None:
    classes = _every_error_class()
    assert len(classes) > 20  # the walk found the package's errors, not only the base
    disagree = {
        cls.__qualname__: (cls.exit_code, cls.wire_code)
        for cls in classes
        if cls.wire_code
        != (
            "locked"
            if issubclass(cls, VaultLocked)
            else "denied"
            if cls.exit_code == 1
            else "invalid"
        )
    }
    assert disagree == {}
