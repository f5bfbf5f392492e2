"""Resource abuse: unlock floods, oversized values, many entries, hostile entry names."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from safeport.vault import CannotUnlock, EntryError
from safeport.vault import kdf as kdf_module
from safeport.vault.credentials import MAX_VALUE_BYTES
from safeport.vault.payload import Entry
from safeport.vault.secrets import SecretBytes
from tests.cli.cli_runner import run_sp
from tests.vault.vault_factory import PASSPHRASE, make_vault, passphrase


def test_a_flood_of_parallel_unlocks_runs_one_kdf_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vault = make_vault(tmp_path)
    vault.lock()
    running, peak = 0, 0
    guard = threading.Lock()
    real = Argon2id

    class Counting:
        def __init__(self, **options: Any) -> None:
            self._inner = real(**options)

        def derive_into(self, material: Any, out: bytearray) -> int:
            nonlocal running, peak
            with guard:
                running += 1
                peak = max(peak, running)
            time.sleep(0.005)
            try:
                return self._inner.derive_into(material, out)
            finally:
                with guard:
                    running -= 1

    monkeypatch.setattr(kdf_module, "Argon2id", Counting)
    outcomes: list[str] = []

    def attempt(secret: bytes) -> None:
        try:
            store.unlock(SecretBytes(secret)).lock()
            outcomes.append("opened")
        except CannotUnlock:
            outcomes.append("refused")

    threads = [
        threading.Thread(target=attempt, args=(PASSPHRASE if i % 4 == 0 else b"guess %d" % i,))
        for i in range(24)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1
    assert sorted(outcomes).count("opened") == 6 and len(outcomes) == 24


def test_an_oversized_value_is_refused_by_the_library_and_the_cli(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    with pytest.raises(EntryError, match=f"over {MAX_VALUE_BYTES} bytes"):
        vault.add("big", "token", {"token": SecretBytes(b"v" * (MAX_VALUE_BYTES + 1))})
    vault.add("just-fits", "token", {"token": SecretBytes(b"v" * MAX_VALUE_BYTES)})
    assert len(store.path.read_bytes()) > len(before)
    vault.lock()
    (tmp_path / "pass").write_bytes(PASSPHRASE)
    (tmp_path / "huge").write_bytes(b"v" * (50 * 1024 * 1024))
    started = time.monotonic()
    done = run_sp(
        "vault", "add", "huge", "--kind", "token", "--value-file", str(tmp_path / "huge"),
        "--passphrase-file", str(tmp_path / "pass"), home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "larger than" in done.stderr
    assert time.monotonic() - started < 20


def test_many_entries_stay_quick_to_open_and_list(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    entries = dict(vault._payload.entries)
    template = entries["deploy-token"]
    for index in range(5000):
        name = f"bulk-{index:05d}"
        entries[name] = Entry(
            name, "token", template.created, None, {"token": SecretBytes(b"t" * 40)}
        )
    vault._commit(dataclasses.replace(vault._payload, entries=entries))  # one save, not 5000
    vault.lock()
    started = time.monotonic()
    reopened = store.unlock(passphrase())
    listed = reopened.entries()
    assert len(listed) == 5002 and time.monotonic() - started < 30  # not quadratic
    reopened.lock()


HOSTILE_NAMES = [
    "evil\x1b[2J",
    "rtl\u202eexe.txt",
    "zero\u200bwidth",
    "line\nbreak",
    "tab\tname",
    "nul\x00byte",
    "caf\u00e9",
    "\u0430dmin",  # Cyrillic a
    "",
    "-leading-dash",
    ".hidden",
    "x" * 65,
    "trailing ",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_entry_names_are_refused_without_being_echoed(tmp_path: Path, name: str) -> None:
    store, vault = make_vault(tmp_path)
    before = store.path.read_bytes()
    for attempt in (
        lambda: vault.add(name, "token", {"token": SecretBytes(b"x")}),
        lambda: vault.remove(name),
        lambda: vault.rotate(name, {"token": SecretBytes(b"x")}),
        lambda: vault.secret(name),
    ):
        with pytest.raises(EntryError) as caught:
            attempt()
        shown = str(caught.value) + caught.value.diagnostic()
        assert "entry name is 1-64 letters" in shown
        if name:
            assert name not in shown
    assert store.path.read_bytes() == before


def test_the_cli_never_prints_a_hostile_name_raw(tmp_path: Path) -> None:
    (tmp_path / "pass").write_bytes(PASSPHRASE)
    _, vault = make_vault(tmp_path)
    # A name the CLI and library refuse, planted as an older or foreign writer might have
    # stored it (the payload is authenticated, so only a holder of the key could do this).
    hostile = "ok\x1b[31m\u202eevil\u2066"
    entries = dict(vault._payload.entries)
    entries[hostile] = dataclasses.replace(entries["deploy-token"], name=hostile)
    entries[hostile].secrets = {"token": SecretBytes(b"x")}
    vault._commit(dataclasses.replace(vault._payload, entries=entries))
    vault.lock()
    for extra in ((), ("--json",)):
        done = run_sp(
            "vault", "list", *extra, "--passphrase-file", str(tmp_path / "pass"), home=tmp_path
        )
        assert done.returncode == 0, done.stderr
        for raw in ("\x1b", "\u202e", "\u2066"):
            assert raw not in done.stdout + done.stderr
    for command in ("remove", "rotate"):
        args = ("--kind", "token", "--value-file", "-") if command == "rotate" else ()
        done = run_sp(
            "vault", command, "bad\x1b[2Jname", *args, "--passphrase-file",
            str(tmp_path / "pass"), home=tmp_path, stdin=b"v",
        )  # fmt: skip
        assert done.returncode == 2 and "\x1b" not in done.stdout + done.stderr
