"""RFC 3161 time stamps of checkpoint notes: what is stored, and how it is judged (pure).

The gateway asks a time-stamping authority (TSA) to stamp each signed checkpoint note; the
answer is kept beside checkpoint.json, one JSON line per stamp::

    {"note": "<the signed note>", "tsa": "<url>", "response": "<base64 DER TimeStampResp>"}

A stamp proves the note, so the journal up to its sequence, existed no later than the TSA's
time. Whoever later holds the gateway's account and checkpoint key can rewrite the journal and
sign new checkpoints, but cannot get a stamp dated before the rewrite: a stamped note that the
journal no longer matches is tampering, dated between the last stamp that still matches and the
first that does not. A stamp proves existence by a time, never completeness: stamps can be
deleted, and a journal never stamped proves nothing.

ASN.1, CMS and the certificate chain are checked by ``rfc3161-client`` (the library sigstore
uses); this module decides what the results mean.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from rfc3161_client import (
    TimeStampResponse,
    VerifierBuilder,
    decode_timestamp_response,
)

from safeport.errors import Denied
from safeport.shared.audit import ChainReport
from safeport.vault.signed_note import CheckpointNote, NoteInvalid, read_note

STAMPS_FILE = "checkpoint.stamps"
MAX_RESPONSE = 64 * 1024  # a TimeStampResp with its certificates is a few KiB
MAX_STAMPS_FILE = 64 * 1024 * 1024


class StampInvalid(Denied):
    """A stored stamp that does not verify: wrong root, wrong imprint, malformed."""


@dataclass(frozen=True)
class StoredStamp:
    note: str
    tsa: str
    response: bytes

    def line(self) -> bytes:
        body = {
            "note": self.note,
            "tsa": self.tsa,
            "response": base64.b64encode(self.response).decode("ascii"),
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class StampedNote:
    """A note whose stamp verified: it existed no later than ``time``."""

    note: CheckpointNote
    time: datetime
    tsa: str


def note_digest(note: str) -> bytes:
    """The message imprint a stamp of ``note`` carries: SHA-256 of the signed note's bytes."""
    return hashlib.sha256(note.encode()).digest()


def load_stamps(data: bytes) -> tuple[list[StoredStamp], int]:
    """The stamps in a stamps file, and how many lines were not stamps at all."""
    stamps: list[StoredStamp] = []
    malformed = 0
    for raw in data.splitlines():
        try:
            item = json.loads(raw)
            note, tsa = item["note"], item["tsa"]
            response = base64.b64decode(item["response"], validate=True)
            if not isinstance(note, str) or not isinstance(tsa, str):
                raise TypeError("note")
        except (ValueError, TypeError, KeyError, binascii.Error, RecursionError):
            malformed += 1
            continue
        stamps.append(StoredStamp(note=note, tsa=tsa, response=response))
    return stamps, malformed


def check_response(
    response: bytes, note: str, roots: Sequence[x509.Certificate], *, nonce: int | None = None
) -> TimeStampResponse:
    """The decoded response if it is granted, chains to one of ``roots`` under a timeStamping
    certificate and stamps exactly ``note``'s digest; raise :class:`StampInvalid` otherwise."""
    if len(response) > MAX_RESPONSE:
        raise StampInvalid("the time-stamp response is too large")
    if not roots:
        raise StampInvalid("no TSA root certificate to check the stamp with")
    try:
        decoded = decode_timestamp_response(response)
    except Exception as exc:  # hostile DER: whatever the parser raises, it is no response
        raise StampInvalid("the time-stamp response is not an RFC 3161 response") from exc
    builder = VerifierBuilder(roots=list(roots), nonce=nonce)
    try:
        builder.build().verify(decoded, note_digest(note))
    except Exception as exc:
        # The token's certificates are parsed only here, by `cryptography`, whose errors on
        # hostile DER are not all ValueErrors (an unknown X.509 version is its own type): any
        # of them is a stamp that does not verify, never a crash of verify or the stamper.
        raise StampInvalid(f"the time stamp does not verify: {exc}") from exc
    if decoded.tst_info.message_imprint.hash_algorithm.dotted_string != _SHA256:
        raise StampInvalid("the time stamp is not over a SHA-256 digest")
    return decoded


_SHA256 = "2.16.840.1.101.3.4.2.1"


def check_stamp(
    stamp: StoredStamp, roots: Sequence[x509.Certificate], public_key: bytes
) -> StampedNote:
    """A stored stamp, verified: its note signed by the checkpoint key, its token by a root."""
    try:
        note = read_note(stamp.note, public_key)
    except NoteInvalid as exc:
        raise StampInvalid(f"the stamped note: {exc}") from exc
    decoded = check_response(stamp.response, stamp.note, roots)
    return StampedNote(note=note, time=decoded.tst_info.gen_time, tsa=stamp.tsa)


@dataclass(frozen=True)
class StampVerdict:
    """How one journal compares with its stamped notes; ``ok`` False is tampering."""

    ok: bool
    status: str  # "stamped" | "rewritten" | "disordered" | "unstamped" | "none"
    detail: str
    last_good: datetime | None = None


def unstamped() -> StampVerdict:
    """A journal with records but no verified stamp where stamps are expected."""
    return StampVerdict(
        False,
        "unstamped",
        "no time stamp of this journal, though stamps are expected: they were removed, or "
        "none was made yet (sp doctor names an authority's faults)",
    )


def order_problem(stamped: Sequence[StampedNote]) -> str | None:
    """Stamps of one journal that contradict each other (pure): two stamps of one size with
    different hashes.

    A later stamp of a shorter head is no contradiction: with two authorities, one that was
    down stamps the older heads of its backlog after the other stamped a newer one. As long
    as the journal still holds every stamped head, it was neither cut nor rewritten."""
    seen: dict[int, str] = {}
    for item in sorted(stamped, key=lambda s: s.time):
        if seen.setdefault(item.note.head.seq, item.note.head.hash) != item.note.head.hash:
            return (
                f"two stamped checkpoints differ at sequence {item.note.head.seq} (the later "
                f"at {_at(item.time)}): it was rewritten between them"
            )
    return None


def judge_stamps(
    journal: str, stamped: Sequence[StampedNote], hash_at: Mapping[int, str | None]
) -> StampVerdict:
    """Judge a journal against every verified stamp of its notes, oldest first (pure): the
    first stamp it no longer matches dates the rewrite; the last one before it that still
    matches is when the history was last known good.

    ``hash_at[seq]`` is the journal's stored hash at each stamped ``seq`` (None past its end or
    a break).
    """
    if not stamped:
        return StampVerdict(True, "none", "no time-stamped checkpoint")
    last_good: StampedNote | None = None
    for item in sorted(stamped, key=lambda s: s.time):
        seq = item.note.head.seq
        if seq == 0 or hash_at.get(seq) == item.note.head.hash:
            last_good = item
            continue
        since = (
            f"last known good at {_at(last_good.time)}"
            if last_good is not None
            else "it matches no stamp made before then"
        )
        return StampVerdict(
            False,
            "rewritten",
            f"rewritten after a time stamp: sequence {seq} differs from the checkpoint stamped "
            f"at {_at(item.time)} by {item.tsa}; {since}",
            last_good.time if last_good is not None else None,
        )
    assert last_good is not None
    problem = order_problem(stamped)  # each matches the journal, yet they contradict in time
    if problem is not None:
        return StampVerdict(False, "disordered", f"journal {journal!r} was {problem}")
    return StampVerdict(
        True,
        "stamped",
        f"matches {len(stamped)} time-stamped checkpoints, the last at {_at(last_good.time)}",
        last_good.time,
    )


def captured(report: ChainReport, seq: int) -> str | None:
    """The hash a report captured at ``seq``, if the chain reached it intact."""
    if report.chain == "broken" and (report.broken_at or 0) <= seq:
        return None
    return report.captured_hashes.get(seq)


def _at(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
