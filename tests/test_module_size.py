"""No module in ``src/`` holds more than one job's worth of code: 400 lines at most.

A module that long is a sign that two jobs share it. Only tables of data may be longer, and they
are named here, so that a new exception is a decision someone wrote down.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "safeport"
MAX_LINES = 400
# Data, not logic. None at present: the read policy's name tables are split by what they name
# (``policy/private_tables.py``, ``policy/readable_tables.py``), each within the limit.
DATA_MODULES: set[str] = set()


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_every_module_is_at_most_400_lines_unless_it_is_data() -> None:
    too_long = {
        str(path.relative_to(SRC)): _lines(path)
        for path in sorted(SRC.rglob("*.py"))
        if _lines(path) > MAX_LINES and str(path.relative_to(SRC)) not in DATA_MODULES
    }
    assert too_long == {}


def test_the_data_exceptions_are_still_data_and_still_there() -> None:
    for name in DATA_MODULES:
        path = SRC / name
        assert path.exists(), name
        source = path.read_text(encoding="utf-8")
        # A table module defines no functions or classes of its own.
        assert "\ndef " not in source and "\nclass " not in source, name
