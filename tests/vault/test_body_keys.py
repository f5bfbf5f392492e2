"""One-time body keys derived ahead: each used once, never shared with a fork, still opening."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from pathlib import Path

from safeport.shared.audit import JournalWriter, read_records, verify_journal
from safeport.vault import AuditSealer
from safeport.vault.body_keys import BodyKey, KeyReserve
from tests.vault.vault_factory import make_vault, passphrase


class _CountingDerive:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> BodyKey:
        self.calls += 1
        return BodyKey(epk=os.urandom(32), aes_key=os.urandom(32))


def _wait_for(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.005)


def test_prepared_keys_are_taken_without_deriving_on_the_callers_path() -> None:
    derive = _CountingDerive()
    reserve = KeyReserve(derive, size=3)
    reserve.prepare()  # what a journal does right before it waits on fsync
    _wait_for(lambda: derive.calls == 3)
    assert derive.calls == 3
    taken = [reserve.take() for _ in range(3)]
    assert derive.calls == 3  # all three were ready
    reserve.take()  # the reserve is empty and nobody prepared: derived here, not refused
    assert derive.calls == 4
    assert len({key.epk for key in taken}) == 3
    reserve.stop()


def test_taking_a_key_does_not_wake_the_deriving_thread() -> None:
    """Woken at take(), the thread would grab the interpreter at the request's next system
    call; it must wait for prepare(), i.e. for the fsync."""
    derive = _CountingDerive()
    reserve = KeyReserve(derive, size=2)
    reserve.prepare()
    _wait_for(lambda: derive.calls == 2)
    reserve.take()
    time.sleep(0.05)
    assert derive.calls == 2
    reserve.prepare()
    _wait_for(lambda: derive.calls == 3)
    assert derive.calls == 3
    reserve.stop()


def test_no_key_is_ever_handed_out_twice_under_concurrent_seals(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    sealer = AuditSealer(store.public_keys(), keys_ahead=4)
    seen: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(100):
            sealer.prepare()
            epk = sealer.seal(b"{}")["epk"]
            with lock:
                seen.append(epk)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert len(seen) == 400 and len(set(seen)) == 400


def test_a_forked_child_never_seals_with_a_key_its_parent_holds() -> None:
    derive = _CountingDerive()
    reserve = KeyReserve(derive, size=4)
    reserve.prepare()
    _wait_for(lambda: derive.calls == 4)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: take one key and report it
        try:
            os.write(write_end, reserve.take().epk)
        finally:
            os._exit(0)
    os.close(write_end)
    child_epk = os.read(read_end, 32)
    os.close(read_end)
    os.waitpid(pid, 0)
    parents = {reserve.take().epk for _ in range(4)}
    assert derive.calls == 4  # the parent's four were all still there for it
    assert len(child_epk) == 32 and child_epk not in parents
    reserve.stop()


def test_dropping_the_sealer_stops_its_thread(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    sealer = AuditSealer(store.public_keys())
    sealer.prepare()
    _wait_for(lambda: any(t.name == "audit-body-keys" for t in threading.enumerate()))
    before = sum(t.name == "audit-body-keys" for t in threading.enumerate())
    del sealer
    gc.collect()
    _wait_for(lambda: sum(t.name == "audit-body-keys" for t in threading.enumerate()) < before)
    assert sum(t.name == "audit-body-keys" for t in threading.enumerate()) < before


def test_bodies_sealed_with_keys_derived_ahead_open_with_the_vault(tmp_path: Path) -> None:
    store, _ = make_vault(tmp_path)
    journal = tmp_path / "actions.jsonl"
    bodies = [{"n": index, "note": f"ahead-{index}"} for index in range(20)]
    with JournalWriter(journal, sealer=AuditSealer(store.public_keys(), keys_ahead=2)) as w:
        for body in bodies:
            w.append("action.intent", body)  # fsync mode: the writer calls prepare()
    assert b"ahead-" not in journal.read_bytes()
    assert verify_journal(journal).chain == "valid"
    opener = store.unlock(passphrase()).audit_opener()
    opened = [json.loads(opener.open(r["sealed"])) for r in read_records(journal)]
    assert opened == bodies


def test_a_reserve_of_size_zero_derives_every_key_when_it_is_taken(tmp_path: Path) -> None:
    derive = _CountingDerive()
    reserve = KeyReserve(derive, size=0)
    reserve.prepare()
    time.sleep(0.02)
    assert derive.calls == 0
    first, second = reserve.take(), reserve.take()
    assert derive.calls == 2 and first.epk != second.epk
    store, _ = make_vault(tmp_path)
    sealed = AuditSealer(store.public_keys(), keys_ahead=0).seal(b'{"x":1}')
    assert store.unlock(passphrase()).audit_opener().open(sealed) == b'{"x":1}'


def test_a_body_key_never_shows_its_bytes() -> None:
    key = BodyKey(epk=b"\x01" * 32, aes_key=b"\x02" * 32)
    assert "\\x02" not in repr(key) and "\\x01" not in repr(key) and "02" not in str(key)
