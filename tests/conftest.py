"""Shared fixtures. Integration parts skip with a reason, unless CI demands them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRE_INTEGRATION = os.environ.get("SAFEPORT_REQUIRE_INTEGRATION") == "1"


def need(condition: bool, reason: str) -> None:
    """Skip when a real part is missing here; fail instead when CI requires every part."""
    if condition:
        return
    if REQUIRE_INTEGRATION:
        pytest.fail(f"SAFEPORT_REQUIRE_INTEGRATION=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def safeport_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "sp-home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    yield home
