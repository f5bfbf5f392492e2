"""The search index: built ahead of time by `sp context index`, never trusted when serving."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeport.context_server import ServeOptions, build_server
from tests.context_server.test_server import small_workspace

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.context_server.index"


def test_sp_context_index_builds_the_index_under_the_cache_folder(tmp_path: Path) -> None:
    root, home = small_workspace(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "context", "index", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"SAFEPORT_HOME": str(home), "PATH": os.environ["PATH"]},
    )
    assert done.returncode == 0, done.stderr
    assert "indexed 2 files" in done.stderr
    assert done.stdout == ""
    assert list((home / "cache" / "context").glob("index-*.sqlite"))
    # Nothing was written into the workspace.
    assert sorted(p.name for p in root.rglob("*")) == [".env", "app.py", "notes.md", "src"]


def test_stale_index_entries_are_rechecked_against_the_current_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = small_workspace(tmp_path)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    _, service = build_server(ServeOptions(roots=[str(root)]))
    service.index.refresh()
    found = service.search_project("zebra", ".", 20, None)
    assert [h.path for h in found.hits] == ["notes.md"] and found.method == "index"
    # notes.md becomes a link to the private .env; the index still holds its old text.
    (root / "notes.md").unlink()
    (root / "notes.md").symlink_to(".env")
    monkeypatch.setattr(service.index, "refresh_in_background", lambda **_: None)
    assert service.search_project("zebra", ".", 20, None).hits == []
    assert service.search_project("TOKEN", ".", 20, None).hits == []
    # A file whose content changed since indexing is served only if it still matches.
    (root / "src" / "app.py").write_text("def renamed():\n    return 2\n")
    assert service.search_project("def main", ".", 20, None).hits == []
    service.journal.close()


def test_a_policy_tightened_after_indexing_hides_indexed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = small_workspace(tmp_path)
    monkeypatch.setenv("SAFEPORT_HOME", str(home))
    _, first = build_server(ServeOptions(roots=[str(root)]))
    first.index.refresh()
    first.journal.close()
    (home / "context.toml").write_text('[private]\npatterns = ["notes.*"]\n')
    _, second = build_server(ServeOptions(roots=[str(root)]))
    monkeypatch.setattr(second.index, "refresh_in_background", lambda **_: None)
    assert second.index.ready  # the old index, with notes.md still in it
    assert second.search_project("zebra", ".", 20, None).hits == []
    assert second.search("zebra").results == []
    second.journal.close()
