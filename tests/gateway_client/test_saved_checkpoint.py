"""With no gateway listening, `sp audit checkpoint` falls back to the saved copy, and says so;
without a saved copy the gateway's absence is the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.gateway_client.control_socket import GatewayNotRunning
from safeport.gateway_client.saved_checkpoint import latest_checkpoint
from safeport.shared.paths import SafeportPaths, locate


def _paths(tmp_path: Path) -> SafeportPaths:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    return locate(env={"SAFEPORT_HOME": str(home)})


def test_no_gateway_and_no_saved_copy_raises_the_gateway_s_absence(tmp_path: Path) -> None:
    with pytest.raises(GatewayNotRunning):
        latest_checkpoint(_paths(tmp_path))


def test_no_gateway_gives_the_saved_copy_with_the_reason(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.gateway_audit_dir.mkdir(parents=True, exist_ok=True)
    (paths.gateway_audit_dir / "checkpoint.json").write_text('{"heads": []}')
    found = latest_checkpoint(paths)
    assert found.text == '{"heads": []}'
    assert isinstance(found.unanswered, GatewayNotRunning)
