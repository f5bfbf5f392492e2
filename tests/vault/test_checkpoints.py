"""Signed heads catch what the chain alone cannot: a clean cut and a re-chained rewrite."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from safeport.shared.audit import JournalHead, JournalWriter, verify_journal
from safeport.shared.audit.record import GENESIS, format_record
from safeport.vault import (
    CheckpointInvalid,
    compare,
    dump_checkpoints,
    load_checkpoints,
    verify_checkpoint,
)
from safeport.vault.interface import Checkpoint
from tests.vault.vault_factory import make_vault


def sp(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SAFEPORT_HOME": str(home)},
        timeout=60,
    )


def _signed_journal(home: Path, count: int = 10) -> tuple[Path, Path, Checkpoint]:
    """A journal of ``count`` records and a checkpoint file over the writer's in-memory head."""
    _, vault = make_vault(home)
    journal = home / "audit" / "actions.jsonl"
    journal.parent.mkdir(mode=0o700)
    with JournalWriter(journal) as writer:
        for index in range(count):
            writer.append("test.event", {"index": index})
        checkpoint = vault.checkpoint_signer().sign("actions", writer.head)
    cp_file = home / "checkpoint.json"
    cp_file.write_bytes(dump_checkpoints([checkpoint]))
    return journal, cp_file, checkpoint


def test_a_checkpoint_round_trips_and_verifies_against_the_public_file(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    checkpoint = vault.checkpoint_signer().sign("actions", GENESIS)
    (loaded,) = load_checkpoints(dump_checkpoints([checkpoint]), source="cp")
    assert loaded == checkpoint
    verify_checkpoint(loaded, store.public_keys())
    assert loaded.signer_fingerprint == store.public_keys().checkpoint_fingerprint


def test_a_forged_or_altered_checkpoint_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(mode=0o700)
    (tmp_path / "b").mkdir(mode=0o700)
    store, vault = make_vault(tmp_path / "a")
    _, other = make_vault(tmp_path / "b")
    genuine = vault.checkpoint_signer().sign("actions", GENESIS)
    moved = dataclasses.replace(genuine, head=dataclasses.replace(genuine.head, seq=5))
    with pytest.raises(CheckpointInvalid, match="invalid signature"):
        verify_checkpoint(moved, store.public_keys())
    forged = dataclasses.replace(
        other.checkpoint_signer().sign("actions", GENESIS),
        signer_fingerprint=genuine.signer_fingerprint,
    )
    with pytest.raises(CheckpointInvalid, match="invalid signature"):
        verify_checkpoint(forged, store.public_keys())
    foreign = other.checkpoint_signer().sign("actions", GENESIS)
    with pytest.raises(CheckpointInvalid, match="not by this vault"):
        verify_checkpoint(foreign, store.public_keys())
    with pytest.raises(CheckpointInvalid, match="not a safeport checkpoint"):
        load_checkpoints(b'{"format": "other"}', source="cp")


def test_a_locked_vault_signs_nothing(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    signer = vault.checkpoint_signer()
    vault.lock()
    with pytest.raises(Exception, match="locked"):
        signer.sign("actions", GENESIS)


def test_the_chain_alone_misses_a_clean_cut_that_the_checkpoint_catches(tmp_path: Path) -> None:
    journal, _, checkpoint = _signed_journal(tmp_path)
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:7]))
    report = verify_journal(journal, capture_seq=checkpoint.head.seq)
    assert report.chain == "valid"
    verdict = compare(report, checkpoint, "actions")
    assert (verdict.ok, verdict.status) == (False, "truncated")


def _rechain(journal: Path, keep: int, total: int) -> None:
    """Rewrite the journal from record ``keep`` on with a valid chain and different records."""
    lines = journal.read_bytes().splitlines(keepends=True)[:keep]
    head = verify_journal(journal, capture_seq=keep)
    current = JournalHead(seq=keep, hash=head.captured_hash or "")
    for index in range(keep, total):
        line, current = format_record(current, "2026-01-01T00:00:00Z", "test.event", {"i": -index})
        lines.append(line)
    journal.write_bytes(b"".join(lines))


def test_a_rechained_rewrite_verifies_as_a_chain_but_not_against_the_checkpoint(
    tmp_path: Path,
) -> None:
    journal, _, checkpoint = _signed_journal(tmp_path)
    _rechain(journal, keep=4, total=12)
    report = verify_journal(journal, capture_seq=checkpoint.head.seq)
    assert report.chain == "valid" and report.last_sequence == 12
    verdict = compare(report, checkpoint, "actions")
    assert (verdict.ok, verdict.status) == (False, "rewritten")


def test_cli_verify_with_a_checkpoint_prints_the_match_and_the_signer(tmp_path: Path) -> None:
    journal, cp_file, checkpoint = _signed_journal(tmp_path)
    with JournalWriter(journal) as writer:  # records after the checkpoint are fine
        writer.append("test.event", {"later": True})
    done = sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["records: 11", "first sequence: 1", "last sequence: 11", "chain: valid"]
    assert lines[4].startswith("checkpoint: sequence 10 matches the head signed at ")
    assert lines[5] == f"signer: {checkpoint.signer_fingerprint}"


def test_cli_verify_reports_truncation_and_rewrite_with_exit_1(tmp_path: Path) -> None:
    journal, cp_file, _ = _signed_journal(tmp_path)
    original = journal.read_bytes()
    journal.write_bytes(b"".join(original.splitlines(keepends=True)[:6]))
    done = sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 1
    assert "chain: valid" in done.stdout
    assert "checkpoint: journal ends at sequence 6 but sequence 10 was signed" in done.stdout
    journal.write_bytes(original)
    _rechain(journal, keep=3, total=10)
    done = sp("audit", "verify", "--checkpoint", str(cp_file), "--json", home=tmp_path)
    assert done.returncode == 1
    (report,) = json.loads(done.stdout)
    assert report["chain"] == "valid"
    assert report["checkpoint"]["status"] == "rewritten"


def test_cli_verify_notices_a_signed_journal_that_was_deleted(tmp_path: Path) -> None:
    journal, cp_file, _ = _signed_journal(tmp_path)
    (journal.parent / "reads.jsonl").write_bytes(b"")
    journal.unlink()
    done = sp("audit", "verify", "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 1
    assert "journal: actions" in done.stdout
    assert "journal ends at sequence 0 but sequence 10 was signed" in done.stdout
    assert "reads.jsonl has no signer" in done.stdout


def test_cli_verify_refuses_a_checkpoint_signed_by_another_key(tmp_path: Path) -> None:
    journal, cp_file, _ = _signed_journal(tmp_path)
    other_home = tmp_path / "other"
    other_home.mkdir(mode=0o700)
    other_store, _ = make_vault(other_home)
    done = sp(
        "audit",
        "verify",
        str(journal),
        "--checkpoint",
        str(cp_file),
        "--public-keys",
        str(other_store.public_path),
        home=tmp_path,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("sp: the checkpoint was signed by SHA256:")
    assert len(done.stderr.splitlines()) == 1


def test_reads_has_no_signer_and_says_so(tmp_path: Path) -> None:
    _, cp_file, _ = _signed_journal(tmp_path)
    reads = tmp_path / "audit" / "reads.jsonl"
    with JournalWriter(reads, durability="batched") as writer:
        writer.append("read.file", {"path": "<private>"})
    done = sp("audit", "verify", str(reads), "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 0
    assert "checkpoint: reads.jsonl has no signer" in done.stdout
    assert "signer:" not in done.stdout
