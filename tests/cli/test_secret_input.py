"""Secret files are read into one buffer that is zeroed; limits are enforced."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.cli.secret_input import MAX_INPUT_BYTES, read_secret_file
from safeport.errors import UsageError


def test_one_trailing_newline_is_stripped(tmp_path: Path) -> None:
    path = tmp_path / "p"
    path.write_bytes(b"correct horse\r\n")
    assert read_secret_file(path, what="passphrase").reveal() == b"correct horse"
    path.write_bytes(b"two\n\n")
    assert read_secret_file(path, what="passphrase").reveal() == b"two\n"
    assert read_secret_file(path, what="value", strip_newline=False).reveal() == b"two\n\n"


def test_an_oversized_file_is_refused_without_echoing_it(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"CANARY-7f3e" * (MAX_INPUT_BYTES // 8))
    with pytest.raises(UsageError) as caught:
        read_secret_file(path, what="value")
    assert "CANARY" not in caught.value.diagnostic()
