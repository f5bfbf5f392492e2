"""The stamps beside the gateway's journals are judged against those journals, never against a
file of the same name in another folder `sp audit verify` also reads (the user's own audit
folder in an installed gateway): an untouched copy put there must not answer for a rewritten
journal. Real journals, a real TSA (`openssl ts -reply`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.real_tsa import TsaServer
from safeport.errors import Error
from safeport.shared.audit import JournalHead, JournalWriter, verify_journal
from safeport.vault import checkpoint_stamps
from safeport.vault.checkpoint_stamps import verify_stamps
from safeport.vault.signed_note import sign_note
from safeport.vault.timestamp_check import STAMPS_FILE, StoredStamp

KEY = Ed25519PrivateKey.generate()
PUBLIC = KEY.public_key().public_bytes_raw()


def _write(journal: Path, *events: str) -> None:
    journal.unlink(missing_ok=True)
    with JournalWriter(journal) as writer:
        for event in events:
            writer.append("test.event", {"what": event})


def test_a_same_named_copy_in_another_folder_does_not_answer_for_the_stamped_journal(
    tsa: TsaServer, tmp_path: Path
) -> None:
    audit, elsewhere = tmp_path / "gateway", tmp_path / "user"
    audit.mkdir(mode=0o700)
    elsewhere.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    _write(journal, "deploy", "drop table")
    report = verify_journal(journal)
    assert report.last_sequence is not None and report.last_hash is not None
    note = sign_note("actions", JournalHead(report.last_sequence, report.last_hash), KEY)
    stamp = StoredStamp(note, tsa.url(), tsa.honest.reply_for(note.encode()))
    (audit / STAMPS_FILE).write_bytes(stamp.line())
    roots = [x509.load_pem_x509_certificate(tsa.honest.ca_file.read_bytes())]
    honest = verify_stamps(audit, {"actions": journal}, roots, PUBLIC)
    assert honest is not None and honest.ok

    shutil.copy(journal, elsewhere / "actions.jsonl")  # the untouched copy, put aside
    _write(journal, "deploy", "nothing to see")  # the stamped journal, rewritten
    for found in (elsewhere / "actions.jsonl", journal):
        judged = verify_stamps(audit, {"actions": found}, roots, PUBLIC)
        assert judged is not None and not judged.ok, found
        assert judged.verdicts["actions"].status == "rewritten"


def test_a_stamps_file_that_is_no_regular_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """A FIFO (which blocks whoever opens it until a writer comes) or a link in place of
    checkpoint.stamps is refused at once with a clear error."""
    os.mkfifo(tmp_path / STAMPS_FILE)
    with pytest.raises(Error, match="not a regular file"):
        verify_stamps(tmp_path, {}, [], PUBLIC)
    (tmp_path / STAMPS_FILE).unlink()
    (tmp_path / STAMPS_FILE).symlink_to("/dev/zero")
    with pytest.raises(Error, match="cannot read"):
        verify_stamps(tmp_path, {}, [], PUBLIC)


def test_many_stamped_heads_of_one_journal_are_checked_in_one_read_and_a_rewrite_still_shows(
    tsa: TsaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stamp of each of 40 heads of one journal: verify reads the journal once, not once per
    stamped head, and still finds the rewrite below the newest of them."""
    journal = tmp_path / "actions.jsonl"
    lines = []
    with JournalWriter(journal) as writer:
        for index in range(40):
            head = writer.append("test.event", {"n": index})
            note = sign_note("actions", head, KEY)
            lines.append(StoredStamp(note, tsa.url(), tsa.honest.reply_for(note.encode())).line())
    (tmp_path / STAMPS_FILE).write_bytes(b"".join(lines))
    roots = [x509.load_pem_x509_certificate(tsa.honest.ca_file.read_bytes())]
    reads: list[Path] = []

    def counted(path: Path, **kwargs: object) -> object:
        reads.append(path)
        return verify_journal(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint_stamps, "verify_journal", counted)
    honest = verify_stamps(tmp_path, {"actions": journal}, roots, PUBLIC)
    assert honest is not None and honest.ok and reads == [journal]
    assert "matches 40 time-stamped checkpoints" in honest.verdicts["actions"].detail

    kept = journal.read_bytes().splitlines(keepends=True)[:-1]
    journal.write_bytes(b"".join(kept))  # the same records but the last, chained anew
    with JournalWriter(journal) as writer:
        writer.append("test.event", {"n": "rewritten"})
    reads.clear()
    judged = verify_stamps(tmp_path, {"actions": journal}, roots, PUBLIC)
    assert judged is not None and judged.verdicts["actions"].status == "rewritten"
    assert "sequence 40" in judged.verdicts["actions"].detail and reads == [journal]
