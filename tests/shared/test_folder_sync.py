"""fsync_dir flushes a folder, and only a folder: a file or a link to a folder is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.shared.folder_sync import fsync_dir


def test_a_folder_is_synced_after_an_entry_is_renamed_into_it(tmp_path: Path) -> None:
    (tmp_path / "new.tmp").write_bytes(b"x")
    (tmp_path / "new.tmp").rename(tmp_path / "new")
    fsync_dir(tmp_path)
    assert (tmp_path / "new").read_bytes() == b"x"


def test_a_file_is_not_taken_for_its_folder(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        fsync_dir(target)


def test_a_missing_folder_is_an_error_not_a_silent_success(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "gone")
