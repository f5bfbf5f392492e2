"""Tamper-evident audit journals: a hash-chained JSON Lines writer and its offline verifier.

Public surface: :class:`JournalWriter` appends, :func:`verify_journal` checks, and the record
layout lives in :mod:`safeport.shared.audit.record`.
"""

from safeport.shared.audit.folder import JournalResult, verify_files, verify_folder
from safeport.shared.audit.members import BodySealer
from safeport.shared.audit.reader import read_records
from safeport.shared.audit.record import (
    ZERO_HASH,
    JournalBody,
    JournalHead,
    RecordLayoutError,
    format_record,
    parse_head,
)
from safeport.shared.audit.verify import (
    ChainReport,
    discover_journals,
    journal_name,
    journal_segments,
    verify_journal,
)
from safeport.shared.audit.writer import DEFAULT_SEGMENT_BYTES, Durability, JournalWriter

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "ZERO_HASH",
    "BodySealer",
    "ChainReport",
    "Durability",
    "JournalBody",
    "JournalHead",
    "JournalResult",
    "JournalWriter",
    "RecordLayoutError",
    "discover_journals",
    "format_record",
    "journal_name",
    "journal_segments",
    "parse_head",
    "read_records",
    "verify_files",
    "verify_folder",
    "verify_journal",
]
