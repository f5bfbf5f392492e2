"""A certificate or public key file is served as the bytes its content check judged: a private
key written over it in place after the check (same inode, same size) is never what a read, a
chunked read or a hash sees. The write is made from inside the check, so the order is fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeport.context_server.policy.read_policy import BlockReason, ReadPolicy
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.model import ServedRoot
from tests.context_server.policy.material import material


def _overwritten_after_the_check(
    monkeypatch: pytest.MonkeyPatch, path: Path, private: bytes
) -> None:
    judge = ReadPolicy.content_verdict

    def judged_then_overwritten(
        self: ReadPolicy, name: str, data: bytes, size: int
    ) -> BlockReason | None:
        verdict = judge(self, name, data, size)
        with path.open("r+b") as f:  # in place: the inode the gate checked stays
            f.write(private[: len(data)].ljust(len(data), b"\n"))
        return verdict

    monkeypatch.setattr(ReadPolicy, "content_verdict", judged_then_overwritten)


@pytest.mark.parametrize(
    ("name", "public", "private"),
    [
        ("server.pem", "certificate", "pkcs8"),
        ("ca.crt", "certificate", "pkcs1"),
        ("deploy.pub", "ssh_public", "openssh_private"),
        ("request.csr", "request", "ec_private"),
    ],
)
def test_a_key_written_over_a_checked_public_file_is_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, public: str, private: str
) -> None:
    keys = material()
    text = getattr(keys, public)
    text = text if text.endswith("\n") else text + "\n"
    secret = getattr(keys, private).encode()
    target = tmp_path / "ws" / name
    target.parent.mkdir()
    target.write_text(text)
    workspace = Workspace([ServedRoot("ws", tmp_path / "ws")], ReadPolicy())
    try:
        located = workspace.readable_file(name)
        _overwritten_after_the_check(monkeypatch, target, secret)
        head = workspace.read_head(located, 1 << 20).data
        assert target.read_bytes() != text.encode()  # the write did land on disk
        target.write_text(text)
        chunks = b"".join(workspace.iter_chunks(located, chunk=64))
    finally:
        workspace.close()
    assert head == text.encode()
    assert chunks == text.encode()
    assert b"PRIVATE" not in head + chunks


def test_a_public_file_is_still_read_whole_when_nothing_changes(tmp_path: Path) -> None:
    keys = material()
    (tmp_path / "ws").mkdir()
    bundle = keys.certificate + keys.public_key
    (tmp_path / "ws" / "bundle.pem").write_text(bundle)
    workspace = Workspace([ServedRoot("ws", tmp_path / "ws")], ReadPolicy())
    try:
        located = workspace.readable_file("bundle.pem")
        assert workspace.read_head(located, 1 << 20).data == bundle.encode()
        assert b"".join(workspace.iter_chunks(located, chunk=100)) == bundle.encode()
        assert b"".join(workspace.iter_chunks(located, start=10)) == bundle.encode()[10:]
    finally:
        workspace.close()
