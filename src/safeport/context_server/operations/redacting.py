"""Secrets inside ordinary files withheld from what a read serves (``shared.secret_scan``).

A file read whole is redacted as one text. An excerpt serves pieces of lines, so the detector
never judges a piece alone: it looks at the file around what is served (whole lines, and far
enough back to see the start of a key block the excerpt begins inside), finds the secrets there,
and masks each served piece where it overlaps one. A secret split across two excerpts is masked
in both; the lines beside it are served byte for byte, and columns stay those of the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from safeport.context_server.operations.tool_results import Redaction
from safeport.context_server.policy.content_secrets import SecretFinder
from safeport.shared.secret_scan import Finding, marker, redact_spans

# How far around the served bytes the detector looks: more than the longest key block the
# detector knows (64 KiB), so an excerpt starting inside one still sees its BEGIN marker.
CONTEXT_BYTES = 80 * 1024
# read_file looks this far past the bytes it serves, so a token torn by the size cap is still
# recognised (by its whole) and its served part withheld.
LOOKAHEAD_BYTES = 4096

ReadWindow = Callable[[int, int], bytes]
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def redactions(findings: Sequence[Finding]) -> list[Redaction]:
    return [Redaction(kind=f.kind, line=f.line, end_line=f.end_line) for f in findings]


def redact_head(head: bytes, served: bytes, find: SecretFinder) -> tuple[str, tuple[Finding, ...]]:
    """The text of ``served`` (a prefix of ``head``) with every secret ``find`` finds withheld,
    judged on all of ``head``: a secret cut by the end of ``served`` is withheld up to the cut."""
    text = served.decode("utf-8", "replace")
    if len(head) == len(served):
        spans = find(text)
        return redact_spans(text, spans) if spans else (text, ())
    whole = head.decode("utf-8", "replace")
    # Up to the last character of ``served`` (which the cut may have torn), both decodings agree.
    spans = [s for s in find(whole) if s.start < len(text)]
    clipped = [type(s)(s.start, min(s.end, len(text)), s.kind) for s in spans]
    return redact_spans(text, clipped) if clipped else (text, ())


def redact_excerpt(
    lines: list[str],
    ranges: Sequence[tuple[int, int]],
    first_line: int,
    read: ReadWindow,
    find: SecretFinder,
) -> tuple[list[str], list[Redaction]]:
    """``lines`` (decoded from the file's bytes ``ranges``, from line ``first_line`` on) with
    every part of a secret withheld; ``read(start, end)`` gives the file's bytes there."""
    if not lines or not ranges:
        return lines, []
    served_start, served_end = ranges[0][0], ranges[-1][1]
    start = max(0, served_start - CONTEXT_BYTES)
    window = read(start, served_end + CONTEXT_BYTES)
    if len(window) < served_end - start:
        # The file shrank since the excerpt was read: nothing is served that was not judged.
        return ["" for _ in lines], []
    if start:
        newline = window.find(b"\n", 0, served_start - start)
        if newline >= 0:  # whole lines read better (line-anchored rules see their line start)
            window = window[newline + 1 :]
            start += newline + 1
    after = window.rfind(b"\n", served_end - start)
    if after >= 0:
        window = window[: after + 1]
    text = window.decode("utf-8", "surrogateescape")
    # The detector takes valid Unicode: a byte that is not UTF-8 is judged as U+FFFD, one
    # character for one, so offsets in ``text`` still map back to the file's bytes.
    spans = find(_ESCAPED_BYTE.sub("\ufffd", text))
    if not spans:
        return lines, []
    plain = window.isascii()
    secrets = [
        (
            start + (s.start if plain else _byte_len(text[: s.start])),
            start + (s.end if plain else _byte_len(text[: s.end])),
            s.kind,
        )
        for s in spans
    ]
    served: list[str] = []
    found: list[Redaction] = []
    for number, (line, (low, high)) in enumerate(zip(lines, ranges, strict=True)):
        overlaps = [(max(low, a), min(high, b), a < low, kind) for a, b, kind in secrets]
        overlaps = [o for o in overlaps if o[0] < o[1]]
        if not overlaps:
            served.append(line)
            continue
        piece = window[low - start : high - start]
        served.append(_masked(line, piece, low, overlaps))
        at = first_line + number
        found += [
            Redaction(kind=k, line=at, end_line=at) for k in dict.fromkeys(o[3] for o in overlaps)
        ]
    return served, found


class SecretWatch:
    """Whether a file fed block by block holds a secret. Each block is judged with the last
    :data:`CONTEXT_BYTES` before it, so a secret across two blocks (a key block too) is seen
    whole in one of them."""

    def __init__(self, find: SecretFinder) -> None:
        self.found = False
        self._find = find
        self._tail = b""

    def feed(self, block: bytes, last: bool = False) -> None:
        if self.found:
            return
        data = self._tail + block
        cut = len(data) if last else data.rfind(b"\n") + 1
        if cut == 0 and len(data) > 4 * CONTEXT_BYTES:
            cut = len(data)  # one long line: judged in pieces that overlap by CONTEXT_BYTES
        if cut == 0:
            self._tail = data
            return
        if self._find(data[:cut].decode("utf-8", "replace")):
            self.found = True
            return
        self._tail = data[max(0, cut - CONTEXT_BYTES) :]


def _byte_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _masked(line: str, piece: bytes, low: int, overlaps: list[tuple[int, int, bool, str]]) -> str:
    """``line`` (the text of ``piece``, which starts at byte ``low``) with each overlap
    replaced by its marker: indentation before a continued secret and a line's ``\\r`` kept."""
    out: list[str] = []
    done = 0
    for a, b, continued, kind in overlaps:
        begin = _chars(piece[: a - low])
        end = _chars(piece[: b - low])
        out.append(line[done:begin])
        segment = line[begin:end]
        body = segment.lstrip(" \t") if continued else segment
        tail = "\r" if body.endswith("\r") else ""
        if body.strip():
            out.append(segment[: len(segment) - len(body)] + marker(kind) + tail)
        else:
            out.append(segment)
        done = end
    out.append(line[done:])
    return "".join(out)


def _chars(data: bytes) -> int:
    return len(data.decode("utf-8", "surrogateescape"))
