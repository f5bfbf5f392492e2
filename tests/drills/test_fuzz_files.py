"""Property tests over the two files an attacker with the owner's write access can change: a
journal (any flipped byte or cut is found, at the record it hit) and the vault (any flipped byte
is the one "cannot unlock" refusal, or "not a vault" for the magic and version in front).
Budget: :mod:`tests.drills.fuzz_budget`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from safeport.action_gateway.evidence.restart_scan import check_head
from safeport.shared.audit import JournalHead, verify_journal
from safeport.vault import CannotUnlock, NotAVault, VaultFile
from safeport.vault.format import PREFIX_BYTES
from tests.drills.fuzz_budget import fuzz
from tests.shared.audit.journal_factory import write_journal
from tests.vault.vault_factory import MemoryKeyring, make_vault, passphrase

RECORDS = 12


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[bytes]]:
    path = tmp_path_factory.mktemp("j") / "actions.jsonl"
    lines = write_journal(path, RECORDS)
    return path.read_bytes(), lines


def _record_at(lines: list[bytes], offset: int) -> int:
    """The 1-based sequence of the record holding byte ``offset``."""
    end = 0
    for seq, line in enumerate(lines, start=1):
        end += len(line)
        if offset < end:
            return seq
    raise AssertionError("offset past the end")


@fuzz
@given(st.data())
def test_any_flipped_byte_in_a_journal_is_found_at_its_record(
    tmp_path: Path, journal: tuple[bytes, list[bytes]], data: st.DataObject
) -> None:
    original, lines = journal
    offset = data.draw(st.integers(0, len(original) - 1), label="offset")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != original[offset]), label="byte")
    path = tmp_path / "actions.jsonl"
    path.write_bytes(original[:offset] + bytes([new]) + original[offset + 1 :])
    report = verify_journal(path)
    seq = _record_at(lines, offset)
    if offset == len(original) - 1:
        # The last newline: the last record is now a torn tail, which a writer would trim
        # into a recovery record; verify says so, and says where the chain ends.
        assert report.chain == "incomplete" and report.last_sequence == RECORDS - 1
    else:
        assert report.chain == "broken", (offset, new, report)
        assert report.broken_at == seq, (offset, new, report)


@fuzz
@given(st.data())
def test_any_cut_of_a_journal_is_found_against_its_signed_head(
    tmp_path: Path, journal: tuple[bytes, list[bytes]], data: st.DataObject
) -> None:
    original, lines = journal
    cut = data.draw(st.integers(0, len(original) - 1), label="cut")
    path = tmp_path / "actions.jsonl"
    path.write_bytes(original[:cut])
    kept = sum(1 for end in _line_ends(lines) if end <= cut)
    signed = JournalHead(seq=RECORDS, hash=_hash_of(lines[-1]))
    finding = check_head(path, "actions", signed)
    assert finding is not None and finding.status == "truncated", (cut, finding)
    assert finding.last_seq == kept


def _line_ends(lines: list[bytes]) -> list[int]:
    ends, end = [], 0
    for line in lines:
        end += len(line)
        ends.append(end)
    return ends


def _hash_of(line: bytes) -> str:
    return line[9:73].decode()


@pytest.fixture(scope="module")
def vault_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    store, vault = make_vault(tmp_path_factory.mktemp("v"))
    vault.lock()
    return store.path.read_bytes()


@fuzz
@given(st.data())
def test_any_flipped_byte_in_the_vault_is_the_one_refusal(
    tmp_path: Path, vault_bytes: bytes, data: st.DataObject
) -> None:
    offset = data.draw(st.integers(0, len(vault_bytes) - 1), label="offset")
    new = data.draw(st.integers(0, 255).filter(lambda b: b != vault_bytes[offset]), label="byte")
    folder = tmp_path / f"v{offset}-{new}"
    folder.mkdir(mode=0o700)
    path = folder / "vault.sp"
    path.write_bytes(vault_bytes[:offset] + bytes([new]) + vault_bytes[offset + 1 :])
    path.chmod(0o600)
    store = VaultFile(path, keyring=MemoryKeyring())
    try:
        with pytest.raises((CannotUnlock, NotAVault)) as refused:
            store.unlock(passphrase())
        if isinstance(refused.value, NotAVault):
            assert offset < PREFIX_BYTES, offset  # only the magic and version say "not a vault"
        else:
            assert refused.value.message == CannotUnlock().message
    finally:
        shutil.rmtree(folder)


def test_the_untouched_vault_and_journal_pass(
    tmp_path: Path, vault_bytes: bytes, journal: tuple[bytes, list[bytes]]
) -> None:
    """The properties above are about the flip: without one, both files are fine."""
    path = tmp_path / "vault.sp"
    path.write_bytes(vault_bytes)
    path.chmod(0o600)
    VaultFile(path, keyring=MemoryKeyring()).unlock(passphrase()).lock()
    journal_path = tmp_path / "actions.jsonl"
    journal_path.write_bytes(journal[0])
    assert verify_journal(journal_path).chain == "valid"
