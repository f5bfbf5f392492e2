"""What the detector reports: spans of text that hold a secret, and what redaction tells a reader.

Neither type ever carries the secret's value: a span is offsets into text the caller already
holds, and a finding is a kind and line numbers, so both may be logged, journaled or returned to
the agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ahocorasick_rs

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


# What a generated value is written in (base64, base64url, hex, token alphabets). Every rule's
# quantifiers are bounded, so that a line of near misses stays linear; a value longer than a
# rule's bound would be withheld only up to it, and the rest served. A span that ends inside a
# run of these characters is carried on to the run's end: the rest is the same secret. ``.`` is
# left out so that a file name keeps its extension after a token in it.
_VALUE_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
# A copy shorter than this is too likely to be an ordinary word or number elsewhere in the text.
SHORTEST_COPY = 6
# How many distinct values one text's copies are looked for: the automaton is built per text.
MOST_VALUES = 4096


def reach_value_ends(text: str, spans: list[SecretSpan]) -> list[SecretSpan]:
    """Each one-line span that stops inside a run of value characters, carried to its end."""
    reached: list[SecretSpan] = []
    for span in spans:
        end = span.end
        if (
            0 < end < len(text)
            and text[end] in _VALUE_CHARACTERS
            and text[end - 1] in _VALUE_CHARACTERS
            and "\n" not in text[span.start : end]
        ):
            while end < len(text) and text[end] in _VALUE_CHARACTERS:
                end += 1
            span = SecretSpan(span.start, end, span.kind)
        reached.append(span)
    return merge_spans(reached) if len(reached) > 1 else reached


def _automaton(literals: list[str]) -> ahocorasick_rs.AhoCorasick:
    """An automaton built in time linear in the values: a deterministic one (the library's
    choice for a few values) is built in time that grows with the square of a long value that
    repeats itself (a 64 KB value took 9 s), and the values here come from the text."""
    return ahocorasick_rs.AhoCorasick(
        literals, implementation=ahocorasick_rs.Implementation.ContiguousNFA
    )


def every_copy(text: str, spans: list[SecretSpan]) -> list[SecretSpan]:
    """The spans, and every other copy in ``text`` of a one-line value they withhold.

    A value withheld where a rule recognised it (``password: …``) is as secret where it appears
    again without a name (``login as admin/…``, a connection string built from it, the same
    value under an account name): serving that copy would serve the secret. One automaton over
    the distinct values finds every copy in one pass. A copy glued to a letter or digit on
    either side is part of a longer word, not the value."""
    values: dict[str, str] = {}
    for span in spans:
        value = text[span.start : span.end]
        if len(value) >= SHORTEST_COPY and "\n" not in value and not value.isspace():
            values.setdefault(value, span.kind)
        if len(values) >= MOST_VALUES:
            break
    if not values:
        return spans
    literals = list(values)
    automaton = _automaton(literals)
    copies = []
    try:
        found = automaton.find_matches_as_indexes(text, overlapping=True)
    except UnicodeEncodeError:
        # A lone surrogate cannot cross into the automaton; U+FFFD in its place keeps every
        # index (see ``prefilter.hits``), and a value holding one has no copy to look for.
        clean = "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
        literals = [v for v in literals if not any("\ud800" <= c <= "\udfff" for c in v)]
        if not literals:
            return spans
        automaton = _automaton(literals)
        found = automaton.find_matches_as_indexes(clean, overlapping=True)
    for index, start, end in found:
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        if before.isalnum() and literals[index][0].isalnum():
            continue
        if after.isalnum() and literals[index][-1].isalnum():
            continue
        copies.append(SecretSpan(start, end, values[literals[index]]))
    return merge_spans([*spans, *copies])
