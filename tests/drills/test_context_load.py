"""Context servers under concurrent load while files change (see context_load.py).

CI runs a short profile (3 clients, 8 s, 1,500 files); the full one is
``python benchmarks/bench_context_load.py`` (8 clients, 60 s, 20,000 files).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.context_load import run_context_load


def test_concurrent_clients_get_no_error_while_the_workspace_changes(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir(mode=0o700)
    figures = run_context_load(workspace, home, files=1500, clients=3, seconds=8)
    print(json.dumps(figures, sort_keys=True))  # the figures, with -s
    assert figures["errors"] == 0, figures["first_errors"]
    assert figures["servers_alive"]
    assert figures["calls"] > 30
    assert figures["changes"]["written"] > 50 and figures["changes"]["deleted"] > 0
