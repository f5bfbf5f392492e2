"""Secret files are read into one buffer that is zeroed; limits are enforced."""

from __future__ import annotations

import os
import sys
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


def _stdin_from(monkeypatch: pytest.MonkeyPatch, data: bytes) -> int:
    """A real pipe as this process's standard input, holding ``data``; returns its fd."""
    read_end, write_end = os.pipe()
    os.write(write_end, data)
    os.close(write_end)
    stream = os.fdopen(read_end, "r")
    monkeypatch.setattr(sys, "stdin", stream)
    return read_end


def test_one_line_from_stdin_leaves_what_follows_for_the_next_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `sp approvals watch --passphrase-file -`: the answers typed after the passphrase belong
    # to the prompt, which reads the raw descriptor.
    fd = _stdin_from(monkeypatch, b"correct horse\ny\nn\n")
    secret = read_secret_file(Path("-"), what="passphrase", one_line=True)
    assert secret.reveal() == b"correct horse"
    assert os.read(fd, 100) == b"y\nn\n"


def test_without_one_line_stdin_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    _stdin_from(monkeypatch, b"first\nsecond\n")
    assert read_secret_file(Path("-"), what="value").reveal() == b"first\nsecond"
