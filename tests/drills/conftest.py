from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def drill_home(tmp_path: Path) -> Path:
    home = tmp_path / "h"  # short: socket paths have a length limit
    home.mkdir(mode=0o700)
    return home
