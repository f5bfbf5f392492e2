"""Find every secret in a text: one prefilter pass, then only the checks its hits woke.

Text with no anchor costs that one pass (``prefilter.py``). Each hit wakes the rules of its
anchor at the hit itself (or along its line for tokens whose anchor sits inside them; a few lines
around it for AWS secret keys; up to the END marker for key blocks), so real code full of the word
``token`` pays per hit, not per rule per byte.

Characters a reader drops without noticing (zero-width spaces and joiners, soft hyphens, a BOM
or combining mark mid-token, the NULs of UTF-16 text read as UTF-8) and JSON's optional ``\\/``
would split a token for every rule while hiding nothing from whoever reads it. The lines around
each are judged a second time without them, each span found mapped back over what was dropped.
The prefilter finds them in its one pass, so a text without any pays nothing more, and one with
some pays again only for the lines around them.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import threading
from collections import OrderedDict

from safeport.shared.secret_scan.commands import command_at
from safeport.shared.secret_scan.pairs import positional_at
from safeport.shared.secret_scan.prefilter import HIDDEN, HIDDEN_ASCII, hits
from safeport.shared.secret_scan.spans import SecretSpan, every_copy, merge_spans, reach_value_ends
from safeport.shared.secret_scan.structured import sealed_ciphertext
from safeport.shared.secret_scan.token_hits import Readers, TokenRules, around
from safeport.shared.secret_scan.urls import url_credential_at
from safeport.shared.secret_scan.word_looks import table_word_hit, word_hit

_HIDDEN = re.compile("|".join(map(re.escape, (*HIDDEN_ASCII, *HIDDEN))))
# How many lines around a hidden character are judged again: a token is on one line; an AWS
# secret key's id may be this many lines away.
_HIDDEN_CONTEXT_LINES = 3


# Large texts are remembered by a digest of their bytes: an agent reads the same file again and
# again, and the same bytes hold the same secrets, so a second read costs one hash (about a tenth
# of a scan) instead of a scan. Only spans are kept, never text. Smaller texts cost less to scan
# than to hash and look up. The digest is BLAKE3's where its wheel installs, else SHA-256: both
# resist collisions (no one can write a file whose bytes collide with a clean file's to borrow
# its empty answer), and BLAKE3 hashes the 132 KiB a read judges in a third of SHA-256's time
# even where the processor has SHA extensions (0.025 against 0.076 ms), which every first read
# pays before its scan.
def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


try:
    from blake3 import blake3
except ImportError:  # no wheel for this platform
    _digest = _sha256
else:

    def _digest(data: bytes) -> bytes:
        return blake3(data).digest()


REMEMBER_FROM_CHARS = 16 * 1024
REMEMBERED_TEXTS = 256
_recent: OrderedDict[bytes, tuple[SecretSpan, ...]] = OrderedDict()
_recent_lock = threading.Lock()


def find_secrets(text: str) -> list[SecretSpan]:
    """Every secret in ``text``, as non-overlapping spans in text order."""
    if not text:
        return []  # an empty stream (most commands' stderr): nothing to set a scan up for
    if len(text) < REMEMBER_FROM_CHARS:
        return scan_text(text)
    data = text.encode("utf-8", "surrogatepass")
    digest = _digest(data)
    with _recent_lock:
        known = _recent.get(digest)
        if known is not None:
            _recent.move_to_end(digest)
            return list(known)
    # UTF-8 as long as the text is ASCII, which the prefilter's pass then reads as it is.
    spans = _scan(text, data if len(data) == len(text) else None)
    with _recent_lock:
        _recent[digest] = tuple(spans)
        while len(_recent) > REMEMBERED_TEXTS:
            _recent.popitem(last=False)
    return spans


def scan_text(text: str) -> list[SecretSpan]:
    """``find_secrets`` without remembering: every secret in ``text``, scanned now."""
    return _scan(text, None)


def _scan(text: str, ascii_bytes: bytes | None) -> list[SecretSpan]:
    spans, hidden = _find(text, ascii_bytes)
    if hidden:
        spans = merge_spans([*spans, *_find_through_hidden(text, hidden)])
    if not spans:
        return spans
    return every_copy(text, reach_value_ends(text, spans))


def _find_through_hidden(text: str, hidden: list[int]) -> list[SecretSpan]:
    """The secrets of the lines around each hidden character at ``hidden``, judged with every
    hidden character dropped, as spans of ``text``. A key block may be long: a text holding
    one is judged again whole."""
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        regions = [(0, len(text))]
    else:
        regions = []
        for at in hidden:
            if regions and at < regions[-1][1]:
                continue
            line_start = text.rfind("\n", 0, at) + 1
            newline = text.find("\n", at)
            line_end = len(text) if newline < 0 else newline
            start, end = around(text, line_start, line_end, _HIDDEN_CONTEXT_LINES)
            if regions and start <= regions[-1][1]:
                start = regions[-1][0]
                regions.pop()
            regions.append((start, end))
    found = []
    for start, end in regions:
        piece = text[start:end]
        # The k-th dropped character sat before position dropped[k] - k of the shorter text.
        shifted = [m.start() - k for k, m in enumerate(_HIDDEN.finditer(piece))]

        def original(at: int, shifted: list[int] = shifted, start: int = start) -> int:
            return start + at + bisect.bisect_right(shifted, at)

        spans, _ = _find(_HIDDEN.sub("", piece))
        found += [SecretSpan(original(s.start), original(s.end - 1) + 1, s.kind) for s in spans]
    return found


def _find(text: str, ascii_bytes: bytes | None = None) -> tuple[list[SecretSpan], list[int]]:
    """The secrets of ``text`` (as ``ascii_bytes`` if ASCII) and where it hides a character."""
    spans: list[SecretSpan] = []
    hidden: list[int] = []
    line_start = line_end = 0
    # A line's start is searched back for (to the end of the line before) when a hit on it
    # first needs it (-1 until then): a URL's or a command's look reads to its end alone. So
    # is whether it is a Markdown table's row (None until then), whose words are judged as
    # its header.
    line_before = 0
    table_row: bool | None = False
    word_done = -1  # a name holding several words ("secret_token") is judged once
    tokens, readers = TokenRules(text), Readers(text)
    find, rfind, text_end = text.find, text.rfind, len(text)  # bound once: the loop is hot
    for start, end, anchor in hits(text, ascii_bytes):
        if anchor.hidden:
            hidden.append(start)
            continue
        if start >= line_end:  # a new line: find its bounds once, however many hits it holds
            line_before, line_start = line_end, -1
            newline = find("\n", start)
            line_end = text_end if newline < 0 else newline
            table_row = None
        if anchor.rules:
            if line_start < 0:
                line_start = rfind("\n", line_before, start) + 1
            spans += tokens.at(anchor.rules, start, line_start, line_end)
        found: SecretSpan | None = None
        if anchor.word:  # a word's anchor wakes nothing else (``prefilter._table``)
            if table_row is None:  # the line's first word
                if line_start < 0:
                    line_start = rfind("\n", line_before, start) + 1
                table_row = "|" in text[line_start : line_start + 4]  # a slice: no call
            if table_row:
                found, word_done = table_word_hit(
                    text, anchor, start, end, line_start, line_end, word_done, spans
                )
            # The commonest ends, in the loop: a word inside a name already judged, or a weak
            # word inside a longer one (``keyword``, ``apis``, ``rapid``), names nothing.
            elif start < word_done or (anchor.weak and text[end : end + 1].islower()):
                continue
            else:
                found, word_done = word_hit(
                    text, anchor, start, end, line_start, line_end, word_done, spans
                )
        elif anchor.url:
            found = url_credential_at(text, start, line_end)
        elif anchor.command:
            found = command_at(text, start, end, line_end)
        elif anchor.call:
            found = positional_at(text, end, line_end)
        elif anchor.key_block or anchor.shape:
            if line_start < 0:
                line_start = rfind("\n", line_before, start) + 1
            spans += readers.at(anchor, start, end, line_start)
        if found is not None:
            spans.append(found)
    spans += tokens.searched()
    spans = [span for span in spans if not sealed_ciphertext(text, span.start)]
    return merge_spans(spans), hidden
