from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import Gateway


@pytest.fixture
def gateway_home(tmp_path: Path) -> Path:
    home = tmp_path / "h"  # short: socket paths have a length limit
    home.mkdir(mode=0o700)
    return home


@pytest.fixture
def gateway(gateway_home: Path) -> Iterator[Gateway]:
    """A running gateway, unlocked, serving the test policy."""
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start()
    gw.unlock()
    gw.accept_policy()
    try:
        yield gw
    finally:
        rc = gw.stop()
        assert rc == 0, gw.stderr_path.read_text()
