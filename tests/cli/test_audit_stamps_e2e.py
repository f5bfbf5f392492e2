"""`sp audit verify` against evidence kept off the journal's reach: stamps from a real TSA
(`openssl ts -reply`) and checkpoint notes copied elsewhere (`sp audit checkpoint --note`).

The attacker here holds the gateway's account: they rewrite the whole journal and sign new
checkpoints with the real checkpoint key (the signatures are genuine). Only evidence made
before the rewrite and kept out of reach can tell."""

from __future__ import annotations

import json
from pathlib import Path

from harness.real_tsa import TsaServer
from safeport.cli.audit_stamps import stamps_folder
from safeport.shared.audit import JournalHead, JournalWriter, verify_journal
from safeport.vault import OpenVault, dump_checkpoints
from safeport.vault.interface import Checkpoint
from safeport.vault.timestamp_check import STAMPS_FILE, StoredStamp
from tests.cli.cli_runner import run_sp
from tests.vault.vault_factory import make_vault


def _append(journal: Path, *events: str) -> JournalHead:
    with JournalWriter(journal) as writer:
        for event in events:
            writer.append("test.event", {"what": event})
        return writer.head


def _sign(vault: OpenVault, journal: Path) -> Checkpoint:
    """The gateway signs the head it holds in memory; read back here for the test."""
    report = verify_journal(journal)
    assert report.last_sequence is not None and report.last_hash is not None
    head = JournalHead(seq=report.last_sequence, hash=report.last_hash)
    return vault.checkpoint_signer().sign("actions", head)


def _stamp(tsa: TsaServer, audit: Path, checkpoint: Checkpoint) -> None:
    assert checkpoint.note is not None
    stamp = StoredStamp(checkpoint.note, tsa.url(), tsa.honest.reply_for(checkpoint.note.encode()))
    with (audit / STAMPS_FILE).open("ab") as stream:
        stream.write(stamp.line())


def test_a_whole_journal_rewritten_and_re_signed_with_the_real_key_is_caught_by_its_stamps(
    tsa: TsaServer, tmp_path: Path
) -> None:
    _, vault = make_vault(tmp_path)
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    _append(journal, "deploy", "restart")
    _stamp(tsa, audit, _sign(vault, journal))
    _append(journal, "drop table")
    _stamp(tsa, audit, _sign(vault, journal))
    assert stamps_folder(journal, tmp_path) == audit  # the stamps beside the journal verified
    ca = str(tsa.honest.ca_file)
    # The whole audit folder: the stamps beside the journals are not taken for a journal.
    honest = run_sp("audit", "verify", "--tsa-ca", ca, home=tmp_path)
    assert honest.returncode == 0, honest.stdout + honest.stderr
    assert (
        honest.stdout.startswith("journal: actions\n")
        and "journal: checkpoint" not in honest.stdout
    )
    assert "actions: ok: matches 2 time-stamped checkpoints" in honest.stdout

    # The rewrite: a fresh, valid chain without "drop table", signed with the vault's own key,
    # checkpoint.json replaced, and even a new stamp of the rewritten head asked for.
    journal.unlink()
    _append(journal, "deploy", "restart", "nothing to see")
    forged = _sign(vault, journal)
    (audit / "checkpoint.json").write_bytes(dump_checkpoints([forged]))
    _stamp(tsa, audit, forged)
    chain_and_signature = run_sp(
        "audit", "verify", str(journal), "--checkpoint", str(audit / "checkpoint.json"),
        home=tmp_path,
    )  # fmt: skip
    assert "chain: valid" in chain_and_signature.stdout
    done = run_sp("audit", "verify", str(journal), "--tsa-ca", ca, home=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "actions: TAMPERED: rewritten after a time stamp: sequence 2 differs" in done.stdout
    assert "it matches no stamp made before then" in done.stdout
    as_json = run_sp("audit", "verify", str(journal), "--tsa-ca", ca, "--json", home=tmp_path)
    verdict = json.loads(as_json.stdout)["timestamps"]
    assert as_json.returncode == 1 and verdict["status"] == "rewritten" and not verdict["ok"]


def test_stamps_checked_against_another_root_are_invalid_not_trusted(
    tsa: TsaServer, tmp_path: Path
) -> None:
    _, vault = make_vault(tmp_path)
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    _append(journal, "deploy")
    _stamp(tsa, audit, _sign(vault, journal))
    rogue_ca = str(tsa.rogue.ca_file)
    done = run_sp("audit", "verify", str(journal), "--tsa-ca", rogue_ca, home=tmp_path)
    assert done.returncode == 1 and "invalid stamp: a stamp from" in done.stdout
    unchecked = run_sp("audit", "verify", str(journal), home=tmp_path)
    assert unchecked.returncode == 0 and "1 stored, not checked: no TSA root" in unchecked.stdout


def test_a_note_kept_elsewhere_catches_a_removed_or_changed_record_and_passes_growth(
    tmp_path: Path,
) -> None:
    _, vault = make_vault(tmp_path)
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    events = ["deploy", "restart", "drop table", "rotate"]
    _append(journal, *events)
    (audit / "checkpoint.json").write_bytes(dump_checkpoints([_sign(vault, journal)]))
    kept = tmp_path / "elsewhere.notes"
    exported = run_sp("audit", "checkpoint", "--note", "--out", str(kept), home=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert kept.read_text().startswith("safeport/actions/")

    _append(journal, "later")  # grown since: still everything the note covered
    done = run_sp("audit", "verify", str(journal), "--checkpoint", str(kept), home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sequence 4 matches the head of a signed note" in done.stdout

    for altered in (
        ["deploy", "restart", "rotate", "later", "more"],  # one removed, re-chained, longer
        ["deploy", "restart", "select 1", "rotate"],  # one changed, re-chained
        ["deploy", "restart", "drop table"],  # the tail cut
    ):
        journal.unlink()
        _append(journal, *altered)
        done = run_sp("audit", "verify", str(journal), "--checkpoint", str(kept), home=tmp_path)
        assert done.returncode == 1, (altered, done.stdout)
        assert "differs from the signed record" in done.stdout or "journal ends" in done.stdout


def test_a_forged_or_damaged_note_file_is_refused(tmp_path: Path) -> None:
    _, vault = make_vault(tmp_path)
    other_home = tmp_path / "other"
    other_home.mkdir(mode=0o700)
    _, other = make_vault(other_home)
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    _append(journal, "deploy")
    note = _sign(vault, journal).note
    foreign = _sign(other, journal).note
    assert note is not None and foreign is not None
    kept = tmp_path / "kept.notes"
    for text in (foreign, note.replace("\n1\n", "\n0\n"), "safeport/actions/x\n", note + foreign):
        kept.write_text(text)
        done = run_sp("audit", "verify", str(journal), "--checkpoint", str(kept), home=tmp_path)
        assert done.returncode != 0 and "Traceback" not in done.stderr, text


def test_stamps_removed_where_they_are_expected_are_reported_not_passed(
    tsa: TsaServer, tmp_path: Path
) -> None:
    """The rewrite, then the evidence against it removed: the whole stamps file, or only the
    lines of the rewritten journal. Where stamps are expected (--tsa-ca, or [audit.timestamp]
    in gateway.toml) a journal with records and no stamp is reported, not passed."""
    _, vault = make_vault(tmp_path)
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    journal = audit / "actions.jsonl"
    _append(journal, "deploy", "drop table")
    _stamp(tsa, audit, _sign(vault, journal))
    sessions = audit / "sessions.jsonl"
    _append(sessions, "opened")
    _stamp(tsa, audit, vault.checkpoint_signer().sign("sessions", _head(sessions)))
    ca = str(tsa.honest.ca_file)
    honest = run_sp("audit", "verify", "--tsa-ca", ca, home=tmp_path)
    assert honest.returncode == 0, honest.stdout + honest.stderr

    journal.unlink()
    _append(journal, "deploy", "nothing to see")
    kept = (audit / STAMPS_FILE).read_bytes().splitlines(keepends=True)
    (audit / STAMPS_FILE).write_bytes(b"".join(line for line in kept if b"/sessions/" in line))
    only_sessions = run_sp("audit", "verify", "--tsa-ca", ca, home=tmp_path)
    assert only_sessions.returncode == 1, only_sessions.stdout
    assert "actions: TAMPERED: no time stamp" in only_sessions.stdout
    (audit / STAMPS_FILE).unlink()
    for args in (["--tsa-ca", ca], ["--tsa-ca", ca, str(journal)]):
        gone = run_sp("audit", "verify", *args, home=tmp_path)
        assert gone.returncode == 1, (args, gone.stdout)
        assert "actions: TAMPERED: no time stamp" in gone.stdout
    as_json = run_sp("audit", "verify", "--tsa-ca", ca, str(journal), "--json", home=tmp_path)
    assert json.loads(as_json.stdout)["timestamps"]["status"] == "unstamped"

    # The gateway's policy names an authority: the same, without --tsa-ca.
    (tmp_path / "gateway.toml").write_text(
        f'[audit.timestamp]\n[[audit.timestamp.tsa]]\nurl = "{tsa.url()}"\nca_file = "{ca}"\n'
    )
    by_policy = run_sp("audit", "verify", home=tmp_path)
    assert by_policy.returncode == 1 and "no time stamp" in by_policy.stdout, by_policy.stdout


def _head(journal: Path) -> JournalHead:
    report = verify_journal(journal)
    assert report.last_sequence is not None and report.last_hash is not None
    return JournalHead(seq=report.last_sequence, hash=report.last_hash)
