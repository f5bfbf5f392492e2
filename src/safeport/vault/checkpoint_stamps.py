"""The time-stamped checkpoints kept beside checkpoint.json, checked for `sp audit verify`.

The roots a stamp must chain to come from a file the person names (``--tsa-ca``), else from
the authorities in gateway.toml's ``[audit.timestamp]``; never from the stamps file, which
whoever rewrote the journal could also rewrite. Each journal is judged against every stamp of
its notes (:func:`safeport.vault.timestamp_check.judge_stamps`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from safeport.errors import Error
from safeport.shared.audit import verify_journal
from safeport.shared.schemas.config import TimestampSettings, parse_gateway_policy
from safeport.vault.timestamp_check import (
    MAX_STAMPS_FILE,
    STAMPS_FILE,
    StampedNote,
    StampInvalid,
    StampVerdict,
    captured,
    check_stamp,
    judge_stamps,
    load_stamps,
    unstamped,
)

MAX_ROOTS_FILE = 1024 * 1024


@dataclass(frozen=True)
class StampsReport:
    """Every journal's verdict against its stamps, and the stamps that did not verify."""

    verdicts: dict[str, StampVerdict]
    invalid: list[str]
    stored: int

    @property
    def ok(self) -> bool:
        return not self.invalid and all(v.ok for v in self.verdicts.values())


def read_roots(files: Sequence[Path]) -> list[x509.Certificate]:
    roots: list[x509.Certificate] = []
    for file in files:
        try:
            with file.open("rb") as stream:
                roots += x509.load_pem_x509_certificates(stream.read(MAX_ROOTS_FILE))
        except (OSError, ValueError) as exc:
            raise Error(f"cannot read TSA root certificates from {file}: {exc}") from exc
    return roots


def configured_roots(gateway_config: Path) -> tuple[list[x509.Certificate], bool]:
    """The roots [audit.timestamp] names in gateway.toml (none when it is absent or unset),
    and whether it names any authority at all."""
    try:
        text = gateway_config.read_text(encoding="utf-8")
    except OSError:
        return [], False
    settings: TimestampSettings | None = parse_gateway_policy(text)[0].audit.timestamp
    roots: list[x509.Certificate] = []
    for tsa in settings.tsa if settings is not None else []:
        if tsa.ca_pem is not None:
            roots += x509.load_pem_x509_certificates(tsa.ca_pem.encode())
        elif tsa.ca_file is not None:
            roots += read_roots([Path(tsa.ca_file)])
    return roots, settings is not None


def verify_stamps(
    folder: Path, journals: dict[str, Path], roots: Sequence[x509.Certificate], public_key: bytes
) -> StampsReport | None:
    """Judge the journals against the stamps stored in ``folder`` (None: no stamps file)."""
    path = folder / STAMPS_FILE
    try:
        # Not following a link, and not waiting on a FIFO put in its place: either is refused
        # at once, never a verify that hangs.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Error(f"cannot read {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Error(f"{path} is not a regular file")
        data = stream.read(MAX_STAMPS_FILE + 1)
    if len(data) > MAX_STAMPS_FILE:
        raise Error(f"{path} is too large to check")
    stamps, malformed = load_stamps(data)
    invalid = [f"{malformed} lines are not stamps"] if malformed else []
    by_journal: dict[str, list[StampedNote]] = {}
    for stamp in stamps:
        try:
            checked = check_stamp(stamp, roots, public_key)
        except StampInvalid as exc:
            invalid.append(f"a stamp from {stamp.tsa}: {exc}".split("\n", 1)[0][:240])
            continue
        by_journal.setdefault(checked.note.journal, []).append(checked)
    verdicts = {}
    for name, stamped in sorted(by_journal.items()):
        # The stamps in ``folder`` are of the journals in ``folder``: a file of the same name
        # in another folder verify reads (the user's own, for an installed gateway) must not
        # answer for them.
        found = journals.get(name)
        journal = found if found is not None and found.parent == folder else None
        journal = journal or folder / f"{name}.jsonl"
        verdicts[name] = judge_stamps(name, stamped, _hashes(journal, stamped))
    return StampsReport(verdicts, invalid, len(stamps))


def require_stamps(report: StampsReport | None, journals: Sequence[str]) -> StampsReport:
    """``report`` with every one of ``journals`` (signed, holding records) that has no
    verified stamp judged "unstamped": its stamps were removed, or none was made yet."""
    base = report if report is not None else StampsReport({}, [], 0)
    verdicts = dict(base.verdicts)
    for name in journals:
        verdicts.setdefault(name, unstamped())
    return StampsReport(dict(sorted(verdicts.items())), base.invalid, base.stored)


def _hashes(path: Path, stamped: Sequence[StampedNote]) -> dict[int, str | None]:
    """The journal's stored hash at each stamped sequence, all in one pass over the journal
    (its cost does not grow with the number of stamps)."""
    seqs = {item.note.head.seq for item in stamped}
    if not path.exists():
        return dict.fromkeys(seqs)
    report = verify_journal(path, capture_seqs=seqs)
    return {seq: captured(report, seq) for seq in seqs}
