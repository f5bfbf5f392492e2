"""What the detector reports: spans of text that hold a secret, and what redaction tells a reader.

Neither type ever carries the secret's value: a span is offsets into text the caller already
holds, and a finding is a kind and line numbers, so both may be logged, journaled or returned to
the agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# When two rules claim overlapping text, the merged span takes the most specific kind: a key block
# over a provider format over a config shape over a bare assignment.
PRIORITY = {"private-key": 3}
GENERIC_KINDS = frozenset({"secret-assignment"})


@dataclass(frozen=True, order=True)
class SecretSpan:
    """``text[start:end]`` is a secret of ``kind`` (e.g. ``github-token``, ``private-key``)."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Finding:
    """One redacted secret: its kind and the 1-based lines it covered (never its value)."""

    kind: str
    line: int
    end_line: int


def _rank(kind: str) -> int:
    if kind in PRIORITY:
        return PRIORITY[kind]
    return 0 if kind in GENERIC_KINDS else 1


def merge_spans(spans: Iterable[SecretSpan]) -> list[SecretSpan]:
    """Overlapping or touching spans joined into one, in text order, each with the most specific
    kind among those it joined."""
    merged: list[SecretSpan] = []
    for span in sorted(spans):
        if span.end <= span.start:
            continue
        if merged and span.start <= merged[-1].end:
            last = merged[-1]
            kind = last.kind if _rank(last.kind) >= _rank(span.kind) else span.kind
            merged[-1] = SecretSpan(last.start, max(last.end, span.end), kind)
        else:
            merged.append(span)
    return merged
