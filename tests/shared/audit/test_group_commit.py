"""Durable appends share fsyncs, and none returns before an fsync that began after its write."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from safeport.errors import JournalUnavailable
from safeport.shared.audit import JournalWriter, verify_journal


@dataclass(frozen=True)
class _Sync:
    size_at_start: int  # bytes of the file an fsync covers at least
    ended: float


class _SlowDisk:
    """``os.fsync`` that takes ``delay`` seconds and notes what it covered."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.syncs: list[_Sync] = []
        self._real = os.fsync
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        time.sleep(self.delay)
        self._real(fd)
        with self._lock:
            self.syncs.append(_Sync(size, time.perf_counter()))


def _append_from_threads(
    writer: JournalWriter, path: Path, threads: int, each: int
) -> list[tuple[int, float]]:
    """Every append's (seq, time it returned)."""
    returned: list[tuple[int, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work(tag: int) -> None:
        start.wait()
        for index in range(each):
            head = writer.append("test.event", {"thread": tag, "i": index})
            with lock:
                returned.append((head.seq, time.perf_counter()))

    workers = [threading.Thread(target=work, args=(tag,)) for tag in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return returned


def _end_offsets(path: Path) -> dict[int, int]:
    """seq -> the file offset just past that record."""
    offsets: dict[int, int] = {}
    end = 0
    for seq, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        end += len(line)
        offsets[seq] = end
    return offsets


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> _SlowDisk:
    spy = _SlowDisk(delay=0)
    monkeypatch.setattr(os, "fsync", spy)
    return spy


def test_concurrent_appends_share_fsyncs_and_each_waits_for_one_that_covers_it(
    tmp_path: Path, disk: _SlowDisk
) -> None:
    path = tmp_path / "actions.jsonl"
    disk.delay = 0.004
    with JournalWriter(path, durability="fsync") as writer:
        returned = _append_from_threads(writer, path, threads=8, each=10)
    assert len(returned) == 80 and verify_journal(path).records == 80
    offsets = _end_offsets(path)
    for seq, at in returned:
        # Durable before return: some fsync began once the record was in the file, and ended
        # before the append returned.
        assert any(s.size_at_start >= offsets[seq] and s.ended <= at for s in disk.syncs), seq
    assert len(disk.syncs) < 60  # shared: eight threads waiting on one disk need far fewer


def test_after_a_failed_fsync_no_append_claims_to_be_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linux may drop the pages a failed fsync covered and report the error only once; a
    later fsync that succeeds proves nothing about them, so the writer takes no more records."""
    path = tmp_path / "actions.jsonl"
    real = os.fsync
    failing = {"on": False}

    def fsync(fd: int) -> None:
        if failing["on"]:
            failing["on"] = False  # the error is reported once, as the kernel does
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with JournalWriter(path, durability="fsync") as writer:
        writer.append("test.event", {"i": 0})
        failing["on"] = True
        with pytest.raises(JournalUnavailable, match="Input/output error"):
            writer.append("test.event", {"i": 1})
        with pytest.raises(JournalUnavailable, match="an earlier fsync failed"):
            writer.append("test.event", {"i": 2})
    # A new writer (a restarted gateway) starts from what the file holds.
    with JournalWriter(path, durability="fsync") as writer:
        assert writer.append("test.event", {"i": 3}).seq == 4


def test_threads_waiting_on_a_failed_fsync_fail_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a thread's record was in the failed fsync or in one that would come after it,
    none of them may be told its record is on disk."""
    path = tmp_path / "actions.jsonl"
    real = os.fsync
    calls = {"n": 0}

    def fsync(fd: int) -> None:
        calls["n"] += 1
        time.sleep(0.01)  # the other threads write and queue up meanwhile
        if calls["n"] == 2:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    outcomes: list[str] = []
    with JournalWriter(path, durability="fsync") as writer:
        writer.append("test.event", {"before": True})  # the first fsync succeeds
        start = threading.Barrier(6)

        def work(index: int) -> None:
            start.wait()
            try:
                writer.append("test.event", {"i": index})
                outcomes.append("ok")
            except JournalUnavailable:
                outcomes.append("unavailable")

        workers = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(10)
    assert outcomes == ["unavailable"] * 6


def test_a_rotation_fsyncs_the_old_file_even_with_nothing_of_its_own_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's record, written but not yet fsynced, must be on disk before the first
    record of the next segment (which chains on it) can be."""
    path = tmp_path / "actions.jsonl"
    events: list[tuple[str, int]] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        events.append(("fsync", os.fstat(fd).st_ino))
        real_fsync(fd)

    def rename(src: object, dst: object) -> None:
        events.append(("rename", os.lstat(str(src)).st_ino))
        real_rename(src, dst)  # type: ignore[arg-type]

    with (
        # A batch window the test outlasts: the other writer never flushes by itself.
        JournalWriter(path, durability="batched", segment_bytes=4096, batch_window_s=60.0) as other,
        JournalWriter(path, durability="fsync", segment_bytes=4096) as rotating,
    ):
        rotating.append("test.event", {"first": True})
        while path.stat().st_size < 4096 - 300:
            other.append("test.event", {"pad": "p" * 100})  # written, not synced
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "rename", rename)
        rotating.append("test.event", {"pad": "p" * 400})
        monkeypatch.setattr(os, "fsync", real_fsync)
        monkeypatch.setattr(os, "rename", real_rename)
    renamed = next(i for i, (what, _) in enumerate(events) if what == "rename")
    old_inode = events[renamed][1]
    assert ("fsync", old_inode) in events[:renamed]
    assert verify_journal(path).chain == "valid"


def test_batched_appends_return_before_any_fsync_and_flush_syncs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, disk: _SlowDisk
) -> None:
    path = tmp_path / "reads.jsonl"
    with JournalWriter(path, durability="batched", batch_window_s=60.0) as writer:
        for index in range(3):
            writer.append("test.event", {"i": index})
        assert disk.syncs == []
        writer.flush()
        assert [s.size_at_start for s in disk.syncs] == [path.stat().st_size]
        writer.flush()  # nothing new: no second fsync
        assert len(disk.syncs) == 1


class _PreparingSealer:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def prepare(self) -> None:
        self.events.append("prepare")

    def seal(self, plaintext: bytes) -> Mapping[str, str]:
        self.events.append("seal")
        return {"alg": "test-clear", "ct": plaintext.decode()}


def test_a_sealers_prepare_runs_right_before_the_fsync_the_append_waits_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moment the thread waits on the disk is when work for the next seals is free."""
    path = tmp_path / "actions.jsonl"
    events: list[str] = []
    real = os.fsync

    def noting_fsync(fd: int) -> None:
        events.append("fsync")
        real(fd)

    monkeypatch.setattr(os, "fsync", noting_fsync)
    with JournalWriter(path, durability="fsync", sealer=_PreparingSealer(events)) as writer:
        writer.append("action.intent", {"n": 1})
        writer.append("action.outcome", {"n": 2})
    assert events == ["seal", "prepare", "fsync"] * 2
    assert verify_journal(path).records == 2


def test_a_sealer_without_prepare_is_used_as_before(tmp_path: Path) -> None:
    class Plain:
        def seal(self, plaintext: bytes) -> Mapping[str, str]:
            return {"alg": "test-clear", "ct": plaintext.decode()}

    path = tmp_path / "actions.jsonl"
    with JournalWriter(path, durability="fsync", sealer=Plain()) as writer:
        assert writer.append("action.intent", {"n": 1}).seq == 1
    assert verify_journal(path).records == 1
