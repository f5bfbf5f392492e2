"""RFC 3161 stamps of checkpoint notes, made by a real TSA (`openssl ts -reply`), judged.

Every way a stored stamp can lie is refused (another root, another note's digest, bytes that
are no response, a note not signed by the vault's key), and a journal that no longer matches a
stamped note is tampering, dated by the stamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.real_tsa import TsaServer
from safeport.shared.audit import JournalHead
from safeport.vault.signed_note import read_note, sign_note
from safeport.vault.timestamp_check import (
    StampedNote,
    StampInvalid,
    StoredStamp,
    check_stamp,
    judge_stamps,
    load_stamps,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = KEY.public_key().public_bytes_raw()


def _root(tsa: TsaServer) -> x509.Certificate:
    return x509.load_pem_x509_certificate(tsa.honest.ca_file.read_bytes())


def _note(seq: int, digest: str = "ab" * 32) -> str:
    return sign_note("actions", JournalHead(seq=seq, hash=digest), KEY)


def test_a_stamp_from_the_configured_authority_verifies(tsa: TsaServer) -> None:
    note = _note(10)
    stamp = StoredStamp(note, tsa.url(), tsa.honest.reply_for(note.encode()))
    (again,), malformed = load_stamps(stamp.line() + b"not json\n")
    assert again == stamp and malformed == 1
    checked = check_stamp(again, [_root(tsa)], PUBLIC)
    assert checked.note.head.seq == 10
    assert abs(checked.time - datetime.now(UTC)) < timedelta(minutes=5)


def test_a_stamp_that_lies_is_refused(tsa: TsaServer) -> None:
    note = _note(10)
    root = _root(tsa)
    lies = {
        "another root": StoredStamp(note, "t", tsa.rogue.reply_for(note.encode())),
        "another digest": StoredStamp(note, "t", tsa.honest.reply_for(_note(11).encode())),
        "not a response": StoredStamp(note, "t", b"\x30\x03\x02\x01\x00"),
        "huge": StoredStamp(note, "t", b"\x30" * 70_000),
        "a note the key never signed": StoredStamp(
            sign_note("actions", JournalHead(10, "ab" * 32), Ed25519PrivateKey.generate()),
            "t",
            tsa.honest.reply_for(note.encode()),
        ),
    }
    for what, stamp in lies.items():
        with pytest.raises(StampInvalid):
            check_stamp(stamp, [root], PUBLIC)
            pytest.fail(what)
    with pytest.raises(StampInvalid, match="no TSA root"):
        check_stamp(StoredStamp(note, "t", tsa.honest.reply_for(note.encode())), [], PUBLIC)


def test_a_token_whose_embedded_certificate_does_not_parse_is_invalid_not_a_crash(
    tsa: TsaServer,
) -> None:
    """The certificates inside a token are parsed by `cryptography`, whose errors are not all
    ValueErrors (an unknown X.509 version is not): a TSA, or whoever edits the stamps file,
    must get "does not verify", never an exception that ends `sp audit verify` or the
    stamper's thread."""
    note = _note(10)
    good = tsa.honest.reply_for(note.encode())
    version = bytes.fromhex("a003020102")  # [0] EXPLICIT INTEGER 2: an X.509 v3 certificate
    places = [at for at in range(len(good)) if good.startswith(version, at)]
    assert places
    for at in places:
        for bad_version in (0x27, 0x05):
            token = bytearray(good)
            token[at + len(version) - 1] = bad_version
            with pytest.raises(StampInvalid):
                check_stamp(StoredStamp(note, "t", bytes(token)), [_root(tsa)], PUBLIC)


T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _stamped(seq: int, digest: str, minutes: int) -> StampedNote:
    return StampedNote(read_note(_note(seq, digest), PUBLIC), T0 + timedelta(minutes=minutes), "t")


def test_a_journal_that_still_holds_every_stamped_head_passes() -> None:
    stamps = [_stamped(5, "aa" * 32, 0), _stamped(9, "bb" * 32, 10)]
    verdict = judge_stamps("actions", stamps, {5: "aa" * 32, 9: "bb" * 32})
    assert verdict.ok and verdict.last_good == T0 + timedelta(minutes=10)


def test_a_rewrite_after_a_stamp_is_tampering_with_the_time_last_known_good() -> None:
    stamps = [_stamped(5, "aa" * 32, 0), _stamped(9, "bb" * 32, 10), _stamped(12, "cc" * 32, 20)]
    # Records 6..9 rewritten (so 9 and 12 differ), re-chained: 5 still matches.
    verdict = judge_stamps("actions", stamps, {5: "aa" * 32, 9: "99" * 32, 12: "12" * 32})
    assert not verdict.ok and verdict.status == "rewritten"
    assert verdict.last_good == T0
    assert "sequence 9 differs" in verdict.detail
    assert "last known good at 2026-12-01T09:00:00Z" in verdict.detail
    # The whole journal rewritten: no stamp matches; cut short: the stamped sequence is gone.
    assert judge_stamps("actions", stamps, {5: "55" * 32}).last_good is None
    assert not judge_stamps("actions", stamps, {5: "aa" * 32, 9: "bb" * 32, 12: None}).ok


def test_a_shorter_head_stamped_later_by_a_slower_authority_is_not_tampering() -> None:
    """Two authorities: one stamps the head at 9 at once, the other was down and stamps the
    older head at 5 from its backlog ten minutes later. The journal holds both heads, so it was
    neither cut nor rewritten; only a head it no longer holds is evidence."""
    late = [_stamped(9, "bb" * 32, 0), _stamped(5, "aa" * 32, 10)]
    verdict = judge_stamps("actions", late, {5: "aa" * 32, 9: "bb" * 32})
    assert verdict.ok and verdict.status == "stamped", verdict.detail
    assert verdict.last_good == T0 + timedelta(minutes=10)
    # Cut back to 5 and re-grown otherwise: the head at 9 it no longer holds is tampering.
    assert judge_stamps("actions", late, {5: "aa" * 32, 9: "99" * 32}).status == "rewritten"


def test_stamps_that_contradict_each_other_in_time_are_tampering() -> None:
    # Two stamped heads at one sequence: the journal differs from one of them, dated by it.
    forked = [_stamped(9, "bb" * 32, 0), _stamped(9, "cc" * 32, 10)]
    assert judge_stamps("actions", forked, {9: "cc" * 32}).status == "rewritten"
    assert judge_stamps("actions", forked, {9: "bb" * 32}).last_good == T0
    assert judge_stamps("actions", [], {}).ok
