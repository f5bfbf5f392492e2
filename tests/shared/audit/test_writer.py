"""The writer keeps one chain across processes, crashes and rotation; it refuses unsafe files."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import multiprocessing
import os
import stat
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from safeport.errors import AuditError, JournalUnavailable
from safeport.shared.audit import JournalWriter, verify_journal
from safeport.shared.audit.writer import BATCH_WINDOW_S
from tests.shared.audit.journal_factory import write_journal


def test_the_journal_file_is_created_0600(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    write_journal(path, 1)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_head_tracks_the_last_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with JournalWriter(path) as writer:
        head = writer.append("test.event", {"n": 1})
        assert writer.head == head and head.seq == 1
        head2 = writer.append("test.event", {"n": 2})
    assert head2.seq == 2
    assert json.loads(path.read_bytes().splitlines()[-1])["hash"] == head2.hash


def test_a_symlink_in_place_of_the_journal_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    os.chmod(target, 0o600)
    (tmp_path / "a.jsonl").symlink_to(target)
    with (
        JournalWriter(tmp_path / "a.jsonl") as writer,
        pytest.raises(JournalUnavailable, match="symbolic link"),
    ):
        writer.append("test.event", {})
    assert target.read_bytes() == b""


def test_a_hard_linked_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    write_journal(path, 1)
    os.link(path, tmp_path / "alias")
    with JournalWriter(path) as writer, pytest.raises(JournalUnavailable, match="hard links"):
        writer.append("test.event", {})


def test_a_journal_with_loose_permissions_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    write_journal(path, 1)
    os.chmod(path, 0o644)
    with JournalWriter(path) as writer, pytest.raises(JournalUnavailable, match="0644"):
        writer.append("test.event", {})


def test_a_record_over_one_mebibyte_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    write_journal(path, 1)
    before = path.read_bytes()
    with JournalWriter(path) as writer, pytest.raises(AuditError, match="1 MiB"):
        writer.append("test.event", {"blob": "x" * (1024 * 1024)})
    assert path.read_bytes() == before


def test_an_invalid_kind_is_refused(tmp_path: Path) -> None:
    with JournalWriter(tmp_path / "a.jsonl") as writer, pytest.raises(AuditError):
        writer.append('x","seq":1', {})


def test_a_torn_tail_is_trimmed_and_kept_in_a_recovery_record(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 3)
    torn = lines[2][:-20]  # a crash in the middle of record 3
    path.write_bytes(b"".join(lines[:2]) + torn)
    assert verify_journal(path).chain == "incomplete"

    with JournalWriter(path) as writer:
        head = writer.append("test.event", {"after": "crash"})

    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    recovery = records[2]
    assert recovery["kind"] == "recovery"
    assert recovery["body"]["trimmed_bytes"] == len(torn)
    assert recovery["body"]["trimmed_sha256"] == hashlib.sha256(torn).hexdigest()
    assert base64.b64decode(recovery["body"]["trimmed_b64"]) == torn
    assert head.seq == 4 and records[3]["body"] == {"after": "crash"}
    assert verify_journal(path).chain == "valid"


def test_a_journal_that_is_only_a_torn_line_recovers_from_genesis(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"hash":"abc')
    os.chmod(path, 0o600)
    with JournalWriter(path) as writer:
        writer.append("test.event", {})
    report = verify_journal(path)
    assert (report.chain, report.records) == ("valid", 2)


def test_a_torn_first_record_of_a_fresh_segment_goes_on_from_the_segment_before(
    tmp_path: Path,
) -> None:
    """A crash while writing the first record after a rotation leaves an active file that is
    only a torn line; the recovery record continues the chain of the newest segment. (Found by
    the crash drill: it restarted at seq 1, and the journal no longer verified.)"""
    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, segment_bytes=4096) as writer:
        while not list(tmp_path.glob("actions.0*.jsonl")):
            torn = writer.append("test.event", {"pad": "p" * 400})
    # The first record of the fresh active file is the one the crash tore.
    path.write_bytes(path.read_bytes()[:13])
    os.chmod(path, 0o600)
    with JournalWriter(path, segment_bytes=4096) as writer:
        head = writer.append("test.event", {"after": "crash"})
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert records[0]["kind"] == "recovery" and records[0]["seq"] == torn.seq
    assert head.seq == torn.seq + 1
    assert verify_journal(path).chain == "valid"


def test_a_damaged_last_record_stops_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = write_journal(path, 2)
    lines[1] = lines[1].replace(b"record 1", b"record Z")
    path.write_bytes(b"".join(lines))
    with JournalWriter(path) as writer, pytest.raises(JournalUnavailable, match="damaged"):
        writer.append("test.event", {})


def test_two_writers_in_one_process_share_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with JournalWriter(path) as one, JournalWriter(path) as two:
        for index in range(20):
            (one if index % 2 else two).append("test.event", {"i": index})
    assert verify_journal(path).records == 20


def _append_many(path: str, count: int, tag: str) -> None:
    with JournalWriter(Path(path), durability="batched") as writer:
        for index in range(count):
            writer.append("test.event", {"writer": tag, "i": index})


def test_two_processes_appending_a_thousand_records_each_keep_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_append_many, args=(str(path), 1000, tag)) for tag in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    report = verify_journal(path)
    assert (report.chain, report.records) == ("valid", 2000)
    tags = [json.loads(line)["body"]["writer"] for line in path.read_bytes().splitlines()]
    assert tags.count("a") == tags.count("b") == 1000
    assert sum(1 for x, y in itertools.pairwise(tags) if x != y) > 0  # interleaved


def test_rotation_with_two_processes_keeps_one_chain(tmp_path: Path) -> None:
    path = tmp_path / "reads.jsonl"
    ctx = multiprocessing.get_context("spawn")

    workers = [ctx.Process(target=_rotate_many, args=(str(path), tag)) for tag in "ab"]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    assert len(list(tmp_path.glob("reads.0*.jsonl"))) >= 5
    report = verify_journal(path)
    assert (report.chain, report.records) == ("valid", 600)


def _rotate_many(path: str, tag: str) -> None:
    with JournalWriter(Path(path), segment_bytes=8192) as writer:
        for index in range(300):
            writer.append("test.event", {"writer": tag, "i": index, "pad": "p" * 64})


class _HeldTimer:
    """threading.Timer that never fires by itself: the test fires it, so a slow machine
    cannot let the window pass in the middle of a batch."""

    armed: ClassVar[list[_HeldTimer]] = []

    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        self.interval, self.function, self.daemon = interval, function, False
        self.cancelled = False

    def start(self) -> None:
        _HeldTimer.armed.append(self)

    def cancel(self) -> None:
        self.cancelled = True


def test_batched_mode_flushes_within_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records are written at once; the first one arms one flush, due a window later, and
    that one fsync covers the whole batch."""
    path = tmp_path / "reads.jsonl"
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(_HeldTimer, "armed", [])
    monkeypatch.setattr(threading, "Timer", _HeldTimer)
    monkeypatch.setattr(os, "fsync", spy)
    writer = JournalWriter(path, durability="batched")
    try:
        for index in range(50):
            writer.append("test.event", {"i": index})
        assert synced == []  # write-at-once, fsync later
        assert verify_journal(path).records == 50
        assert [timer.interval for timer in _HeldTimer.armed] == [BATCH_WINDOW_S]
        _HeldTimer.armed[0].function()  # the window has passed
        assert len(synced) == 1  # one fsync covered the whole batch
        writer.append("test.event", {"i": 50})
        assert len(_HeldTimer.armed) == 2  # the next record arms the next window
    finally:
        writer.close()
    assert _HeldTimer.armed[-1].cancelled  # closing flushes at once instead
    assert verify_journal(path).records == 51


def test_fsync_mode_syncs_before_append_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "actions.jsonl"
    covered: list[int] = []  # the file's size when each fsync began
    real_fsync = os.fsync

    def measuring_fsync(fd: int) -> None:
        covered.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", measuring_fsync)
    with JournalWriter(path, durability="fsync") as writer:
        writer.append("test.event", {})
        assert covered == [path.stat().st_size]  # the record was in the file when it began
        writer.append("test.event", {})
        assert covered[1:] == [path.stat().st_size]


class _ReversingSealer:
    def seal(self, plaintext: bytes) -> Mapping[str, str]:
        return {
            "alg": "test-reverse",
            "key": "k1",
            "ct": base64.b64encode(plaintext[::-1]).decode(),
        }


def test_a_sealer_replaces_the_body_and_the_chain_still_verifies_without_a_key(
    tmp_path: Path,
) -> None:
    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, sealer=_ReversingSealer()) as writer:
        writer.append("action.intent", {"target": "build-staging"})
    raw = path.read_bytes()
    assert b"build-staging" not in raw
    record = json.loads(raw)
    assert "body" not in record and record["sealed"]["alg"] == "test-reverse"
    assert verify_journal(path).chain == "valid"


def test_writer_errors_never_carry_the_body(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with JournalWriter(path) as writer, pytest.raises(AuditError) as caught:
        writer.append("test.event", {"secret": "CANARY-a8f3", "bad": object()})
    assert "CANARY" not in str(caught.value)


def test_a_full_disk_refuses_the_append_and_the_journal_goes_on_when_space_returns(
    tmp_path: Path,
) -> None:
    """A real 1 MiB tmpfs filled to the last byte: the failed append leaves no torn line, and
    once space is freed the same writer appends again and the chain verifies (no restart)."""
    import shutil
    import subprocess

    from tests.conftest import need

    need(os.geteuid() == 0 and shutil.which("mount") is not None, "root, to mount a tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    try:
        path = disk / "actions.jsonl"
        writer = JournalWriter(path)
        writer.append("first", {"n": 1})
        filler = disk / "filler"
        with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 512)
        with pytest.raises(JournalUnavailable, match="No space left"):
            writer.append("refused", {"pad": "x" * 20_000})
        assert path.read_bytes().endswith(b"\n")  # no half record left behind
        filler.unlink()
        writer.append("again", {"n": 2})
        writer.close()
        report = verify_journal(path)
        assert report.ok and report.records == 2, report.verdict()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
