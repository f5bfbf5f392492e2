"""Forged, replayed, relabelled, contradictory and malformed checkpoints; spliced sealed bodies."""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from safeport.errors import AuditError
from safeport.shared.audit import JournalHead, JournalWriter, read_records, verify_journal
from safeport.shared.audit.record import GENESIS, format_record
from safeport.vault import (
    AuditSealer,
    CheckpointInvalid,
    OpenVault,
    VaultCheckpointSigner,
    compare,
    dump_checkpoints,
    load_checkpoints,
    verify_checkpoint,
)
from safeport.vault.checkpoints import check_consistent
from safeport.vault.interface import Checkpoint
from tests.vault.cli_runner import run_sp
from tests.vault.vault_factory import make_vault


def _signer_at(vault: OpenVault, moment: datetime) -> VaultCheckpointSigner:
    """The vault's own key, with a chosen signing time (the gateway signs now)."""
    return VaultCheckpointSigner(
        vault._payload.checkpoint_private, vault.public_keys(), clock=lambda: moment
    )


T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _journal(home: Path, count: int) -> Path:
    audit = home / "audit"
    audit.mkdir(mode=0o700, exist_ok=True)
    journal = audit / "actions.jsonl"
    with JournalWriter(journal) as writer:
        for index in range(count):
            writer.append("test.event", {"index": index})
    return journal


def _head(journal: Path) -> JournalHead:
    report = verify_journal(journal)
    assert report.last_sequence is not None
    return JournalHead(seq=report.last_sequence, hash=read_records(journal, 1)[-1]["hash"])


def _cut_and_continue(journal: Path, keep: int, add: int) -> None:
    """An attacker cuts the journal; a restarted gateway carries on from the cut file."""
    lines = journal.read_bytes().splitlines(keepends=True)[:keep]
    journal.write_bytes(b"".join(lines))
    with JournalWriter(journal) as writer:
        for index in range(add):
            writer.append("test.event", {"after-cut": index})


def test_a_checkpoint_relabelled_to_another_journal_fails_its_signature(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    genuine = vault.checkpoint_signer().sign("sessions", JournalHead(seq=3, hash="a" * 64))
    relabelled = dataclasses.replace(genuine, journal="actions")
    with pytest.raises(CheckpointInvalid, match="invalid signature"):
        verify_checkpoint(relabelled, store.public_keys())
    redated = dataclasses.replace(genuine, signed_at=genuine.signed_at + timedelta(days=1))
    with pytest.raises(CheckpointInvalid, match="invalid signature"):
        verify_checkpoint(redated, store.public_keys())


def test_another_journals_checkpoint_does_not_vouch_for_this_one(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 4)
    other = vault.checkpoint_signer().sign("sessions", _head(journal))  # same head, other name
    cp_file = tmp_path / "cp.json"
    cp_file.write_bytes(dump_checkpoints([other]))
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 1
    assert "checkpoint: the checkpoint file has no head for actions" in done.stdout


def test_replaying_an_older_checkpoint_hides_a_cut_after_it(tmp_path: Path) -> None:
    """Documented limit: a checkpoint vouches for the journal up to its own sequence. Whoever
    holds only an old one cannot see a later cut; keep the latest one out of the attacker's
    reach (or every one: a file with both catches it)."""
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 5)
    old = _signer_at(vault, T0).sign("actions", _head(journal))
    with JournalWriter(journal) as writer:
        for index in range(5):
            writer.append("test.event", {"more": index})
        latest = _signer_at(vault, T0 + timedelta(minutes=5)).sign("actions", writer.head)
    journal.write_bytes(b"".join(journal.read_bytes().splitlines(keepends=True)[:7]))
    report = verify_journal(journal, capture_seq=old.head.seq)
    assert compare(report, old, "actions").ok  # the limit, pinned
    (tmp_path / "both.json").write_bytes(dump_checkpoints([old, latest]))
    done = run_sp(
        "audit", "verify", str(journal), "--checkpoint", str(tmp_path / "both.json"),
        home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1 and "journal ends at sequence 7 but sequence 10" in done.stdout


def test_two_signed_heads_at_one_sequence_expose_a_cut_the_gateway_wrote_past(
    tmp_path: Path,
) -> None:
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 6)
    before = _signer_at(vault, T0).sign("actions", _head(journal))
    _cut_and_continue(journal, keep=3, add=3)  # back at sequence 6, different records
    after = _signer_at(vault, T0 + timedelta(minutes=1)).sign("actions", _head(journal))
    assert after.head.seq == before.head.seq and after.head.hash != before.head.hash
    # Comparing only the latest head with the file, all looks well ...
    assert compare(verify_journal(journal, capture_seq=6), after, "actions").ok
    # ... but the two genuine heads contradict each other.
    with pytest.raises(CheckpointInvalid, match="two different signed records at sequence 6"):
        check_consistent([before, after])
    cp_file = tmp_path / "cp.json"
    cp_file.write_bytes(dump_checkpoints([before, after]))
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "rewritten after a checkpoint" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_head_signed_later_at_a_lower_sequence_exposes_a_cut(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 6)
    before = _signer_at(vault, T0).sign("actions", _head(journal))
    _cut_and_continue(journal, keep=2, add=2)
    after = _signer_at(vault, T0 + timedelta(minutes=1)).sign("actions", _head(journal))
    with pytest.raises(CheckpointInvalid, match="cut and written again"):
        check_consistent([after, before])


def test_consistent_heads_of_several_journals_pass(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    heads = [JournalHead(seq=n, hash=f"{n:064x}") for n in (1, 2, 2, 5)]
    signed = [
        _signer_at(vault, T0 + timedelta(minutes=i)).sign(name, head)
        for i, (name, head) in enumerate(
            zip(["actions", "actions", "actions", "sessions"], heads, strict=True)
        )
    ]
    check_consistent(signed)


def _valid_document(vault: OpenVault) -> dict[str, object]:
    checkpoint = vault.checkpoint_signer().sign("actions", GENESIS)
    document: dict[str, object] = json.loads(dump_checkpoints([checkpoint]))
    return document


def _entry_with(**changes: object) -> Callable[[dict[str, object]], object]:
    def change(document: dict[str, object]) -> None:
        entries = document["checkpoints"]
        assert isinstance(entries, list)
        entries[0].update(changes)

    return change


def _entry_without(field: str) -> Callable[[dict[str, object]], object]:
    def change(document: dict[str, object]) -> None:
        entries = document["checkpoints"]
        assert isinstance(entries, list)
        del entries[0][field]

    return change


MALFORMED: dict[str, Callable[[dict[str, object]], object] | bytes] = {
    "empty file": b"",
    "not json": b"\x00\xff garbage",
    "invalid utf-8 inside a string": b'{"format": "\xff"}',
    "top level a list": b"[]",
    "deeply nested": b"[" * 100_000 + b"]" * 100_000,
    "checkpoints a string": lambda d: d.__setitem__("checkpoints", "actions"),
    "checkpoints an object": lambda d: d.__setitem__("checkpoints", {"journal": "actions"}),
    "entry a number": lambda d: d.__setitem__("checkpoints", [7]),
    "version 2": lambda d: d.__setitem__("version", 2),
    "journal path-like": _entry_with(journal="../actions"),
    "journal with a newline": _entry_with(journal="actions\n"),
    "hash uppercase": _entry_with(hash="A" * 64),
    "hash short": _entry_with(hash="a" * 63),
    "seq negative": _entry_with(seq=-1),
    "seq a bool": _entry_with(seq=True),
    "seq a float": _entry_with(seq=1.0),
    "seq a string": _entry_with(seq="1"),
    "signed_at nonsense": _entry_with(signed_at="yesterday"),
    "signed_at a number": _entry_with(signed_at=0),
    "signature not base64": _entry_with(signature="!!"),
    "signature missing": _entry_without("signature"),
    "signer with a terminal escape": _entry_with(signer="SHA256:\x1b]0;pwned\x07"),
    "signer a number": _entry_with(signer=7),
    "signer too long": _entry_with(signer="SHA256:" + "A" * 44),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_checkpoint_file_is_one_clear_refusal(tmp_path: Path, name: str) -> None:
    _, vault = make_vault(tmp_path)
    spec = MALFORMED[name]
    if isinstance(spec, bytes):
        data = spec
    else:
        document = _valid_document(vault)
        spec(document)
        data = json.dumps(document).encode()
    with pytest.raises(CheckpointInvalid, match="not a safeport checkpoint file"):
        load_checkpoints(data, source="cp.json")


def test_a_huge_seq_or_a_wrong_length_signature_is_refused(tmp_path: Path) -> None:
    store, vault = make_vault(tmp_path)
    text = json.dumps(_valid_document(vault)).replace('"seq": 0', '"seq": ' + "9" * 5000)
    with pytest.raises(CheckpointInvalid):
        load_checkpoints(text.encode(), source="cp.json")
    (checkpoint,) = load_checkpoints(dump_checkpoints([vault.checkpoint_signer().sign(
        "actions", GENESIS)]), source="cp.json")  # fmt: skip
    for signature in (b"", b"x" * 63, checkpoint.signature + b"\x00"):
        with pytest.raises(CheckpointInvalid, match="invalid signature"):
            verify_checkpoint(
                dataclasses.replace(checkpoint, signature=signature), store.public_keys()
            )


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.startswith("sp: ") and len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr
    return done.stderr


def test_malformed_checkpoint_files_at_the_cli_are_one_line_each(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 2)
    cp_file = tmp_path / "cp.json"
    cp_file.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert "not a safeport checkpoint file" in _one_line(done, 1)
    cp_file.write_bytes(b" " * (1024 * 1024 + 1))
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert "too large" in _one_line(done, 2)
    document = json.loads(dump_checkpoints([vault.checkpoint_signer().sign("actions", GENESIS)]))
    document["checkpoints"][0]["signer"] = "\x1b[2J\x1b]0;pwned\x07"
    cp_file.write_text(json.dumps(document))
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(cp_file), home=tmp_path)
    assert "\x1b" not in done.stdout + _one_line(done, 1)
    keys = tmp_path / "keys.json"
    keys.write_bytes(b"[" * 50_000 + b"]" * 50_000)
    cp_file.write_bytes(b"{}")
    done = run_sp(
        "audit", "verify", str(journal), "--checkpoint", str(cp_file), "--public-keys", str(keys),
        home=tmp_path,
    )  # fmt: skip
    assert "not a safeport public key file" in _one_line(done, 2)


def test_a_sealed_body_spliced_into_another_journal_still_opens(tmp_path: Path) -> None:
    """Documented limit: a sealed body is bound to the vault's key, not to its journal,
    sequence or kind; moving it needs a re-chain, which only a later checkpoint catches."""
    store, vault = make_vault(tmp_path)
    actions = tmp_path / "actions.jsonl"
    with JournalWriter(actions, sealer=AuditSealer(store.public_keys())) as writer:
        writer.append("action.intent", {"target": "deploy-api"})
    (record,) = read_records(actions)
    sessions = tmp_path / "sessions.jsonl"
    line, _ = format_record(GENESIS, record["ts"], "session.opened", {"sealed": record["sealed"]})
    sessions.write_bytes(line)
    assert verify_journal(sessions).chain == "valid"
    (spliced,) = read_records(sessions)
    assert json.loads(vault.audit_opener().open(spliced["sealed"])) == {"target": "deploy-api"}
    # A swapped ephemeral key or ciphertext from two records does not open.
    other = AuditSealer(store.public_keys()).seal(b'{"x":1}')
    mixed = {**record["sealed"], "epk": other["epk"]}
    with pytest.raises(Exception, match="could not be opened"):
        vault.audit_opener().open(mixed)


def test_checkpoint_signature_bytes_roundtrip_exactly(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    checkpoint: Checkpoint = vault.checkpoint_signer().sign("actions", GENESIS)
    document = json.loads(dump_checkpoints([checkpoint]))
    assert base64.b64decode(document["checkpoints"][0]["signature"]) == checkpoint.signature


@pytest.mark.parametrize(
    "sealed",
    [
        {"epk": base64.b64encode(bytes(32)).decode(), "ct": "AAAAAAAAAAAAAAAAAAAAAA=="},
        {"epk": base64.b64encode(b"\x01" + bytes(31)).decode(), "ct": ""},
        {"epk": None, "ct": None},
        {"epk": "A" * 100_000, "ct": "A"},
        {"epk": base64.b64encode(bytes(range(31))).decode(), "ct": "AAAA"},
        {},
    ],
)
def test_a_hostile_sealed_body_is_one_audit_error(
    tmp_path: Path, sealed: dict[str, object]
) -> None:
    """Low-order points, wrong sizes and missing members, as a journal writer could plant them."""
    _, vault = make_vault(tmp_path)
    with pytest.raises(AuditError, match="could not be opened"):
        vault.audit_opener().open({"alg": "x25519-hkdf-sha256-aes256gcm", **sealed})


def test_hostile_journal_names_and_record_fields_are_shown_inert(tmp_path: Path) -> None:
    """Whoever can write the audit folder chooses file names and record members; neither may
    restyle the terminal in `sp audit verify` or `sp audit show`."""
    _, vault = make_vault(tmp_path)
    journal = _journal(tmp_path, 2)
    hostile = journal.parent / "ev\x1b[2Jil\u202e[bold].jsonl"
    hostile.write_bytes(journal.read_bytes())
    with journal.open("ab") as stream:
        stream.write(b'{"seq":"\\u001b]0;pwned\\u0007","kind":"x\\u202ey","ts":"\\u001b[31m"}\n')
    cp_file = tmp_path / "cp.json"
    cp_file.write_bytes(dump_checkpoints([vault.checkpoint_signer().sign("actions", GENESIS)]))
    for args in (
        ("audit", "verify"),
        ("audit", "verify", "--checkpoint", str(cp_file)),
        ("audit", "show"),
    ):
        done = run_sp(*args, home=tmp_path)
        assert "Traceback" not in done.stderr
        for raw in ("\x1b", "\u202e", "\x07"):
            assert raw not in done.stdout + done.stderr, args
    shown = run_sp("audit", "show", home=tmp_path)
    assert "\\u001b[2J" in shown.stdout and "[bold]" in shown.stdout
