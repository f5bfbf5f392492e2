"""Private key blocks of every kind: PEM (``RSA``, ``EC``, ``DSA``, PKCS#8, encrypted PKCS#8,
PGP), OpenSSH, SSH2 and PuTTY files; pasted plainly, indented in YAML, concatenated in code or
JSON-escaped with a literal ``\\n`` inside one string (as in cloud service-account files),
commented out or quoted behind a gutter on every line (``# ``, ``> ``, `` * ``, a diff's ``-``),
with markup for line breaks (``<br>``, ``&#10;``), or in a log whose every line starts with a
timestamp or a line number, in any mix of these from line to line.

A ``BEGIN … PRIVATE KEY`` marker alone is not a key: parsers quote the marker in their code. A
block is a key when what lies between its markers is base64, headers (``Proc-Type``,
``DEK-Info``), line breaks, escapes, quotes and concatenation, and nothing else.
"""

from __future__ import annotations

import bisect
import re

from safeport.shared.secret_scan.spans import SecretSpan

KIND = "private-key"
MAX_BLOCK = 64 * 1024  # a 16384-bit RSA key in PEM is about 12 KB
MIN_BODY = 40  # base64 characters; no real key is shorter

# The type label may name any algorithm, old or new (``ML-DSA-65``, ``ANY``, ``ENCRYPTED``).
_BEGIN = re.compile(
    r"-{4,5} ?BEGIN (?:[A-Z0-9][A-Z0-9-]{0,15} ){0,3}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    r"|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
)
_END = re.compile(r"-{4,5} ?END (?:[A-Z0-9][A-Z0-9-]{0,15} ){0,3}PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_HEADER = re.compile(
    r"(?m)^[ \t\"']*[A-Za-z][A-Za-z0-9-]{1,30}:[^\n]*$"
    r"|(?<=\\n)[A-Za-z][A-Za-z0-9-]{1,30}: [^\\\n]*"  # the same, JSON-escaped
)
_ESCAPES = re.compile(r"\\+[nrt]|<br ?/?>|&#(?:1[03]|x[aAdD]);|[\s\"'+,\\]")
_BASE64 = re.compile(r"[A-Za-z0-9+/=]*")
# Without an END marker (a truncated paste), the block runs while lines look like key body.
_BODY_RUN = re.compile(r"(?:[A-Za-z0-9+/=\"' \t\r\n,]|\\+[nr]){0,65536}")
# What wraps every line of a key commented out or quoted (``# ``, ``> ``, `` * ``, ``-- ``, a
# diff's ``-``, ``echo "…" >> file``): the text around the BEGIN marker on its own line. Short,
# or it is a line of code that only mentions the marker.
MAX_GUTTER = 16
_BODY_LINE = re.compile(r"[A-Za-z0-9+/=\"' \t\r,]*|[A-Za-z][A-Za-z0-9-]{1,30}:[^\n]*")
# Words of prose between spaces: a key's body may be joined by spaces (an environment variable
# whose line breaks were flattened), but no run of base64 is three short lowercase words.
_PROSE = re.compile(r"(?<![A-Za-z0-9+/])[a-z]{2,12} [a-z]{2,12} [a-z]{2,12}(?![A-Za-z0-9+/])")
_PUTTY_PRIVATE = re.compile(r"Private-Lines: (\d{1,3})\r?\n")
# What may stand before a key's body on each of its lines, in any mix from one line to the next:
# a log's timestamp or a listing's line number (digits and their punctuation, then a space or a
# bar) and a level (``INFO``), comment and quote marks, concatenation and indentation. Each
# alternative takes at least one character and nothing follows the repetition, so a match
# never backtracks past one alternative. Logs put several fields in front, in any order: a
# service and a bar (``docker compose logs``: ``web-1  | ``), syslog's and journald's month, day,
# time and host, then ``app[pid]:``, and kubectl's ``[pod/…/container]``.
_LINE_LEAD = re.compile(
    r"(?:[ \t]+|\d[\d:./T,+-]{0,40}Z?[ \t|\]:]|\[[^\]\n]{0,128}\]|[A-Z]{3,8}[ \t]"
    r"|[A-Za-z][\w.-]{0,62}[ \t]+\||[A-Za-z][\w./-]{0,62}\[\d{1,10}\]:"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[ \t]+\d{1,2}[ \t]+[\d:.]{5,15}"
    r"[ \t]+[\w.-]{1,64}[ \t]"
    r"|[#/*>;|+\"'`!%(-]|\\)*"
)
# And after it: the closing quote, concatenation, a line continuation, a statement's end, the
# end of a comment.
_LINE_TAIL = " \t\r\"'`+,;)*/\\"
_LINE_BREAK = re.compile(r"\r?\n|\\+r\\+n|\\+[nr]|<br ?/?>|&#(?:1[03]|x[aAdD]);")
_BODY_PIECE = re.compile(r"=?[A-Za-z0-9+/]+={0,2}|[A-Za-z][A-Za-z0-9-]{1,30}: .*|")
MIN_LINE = 16  # a key's body line without an END marker after it; shorter is prose or code


class KeyBlocks:
    """The key blocks of one text, asked for at each anchor in text order. The END markers are
    found in one pass the first time, so a text of many BEGIN markers stays linear."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._ends: list[re.Match[str]] | None = None
        self._end_starts: list[int] = []
        self._begins: list[int] | None = None
        self._reached = 0

    def at(self, start: int, line_start: int) -> SecretSpan | None:
        """The key block whose BEGIN marker holds the anchor at ``start``."""
        text = self._text
        if start < self._reached:
            return None  # inside a block already found (its END marker, a marker it quotes)
        if text.startswith("PuTTY-User-Key-File", start):
            return _putty_key(text, start)
        begin = _BEGIN.search(text, max(line_start, start - 64), start + 64)
        if begin is None:
            return None
        span = self._block(begin, line_start)
        if span is not None:
            self._reached = span.end
        return span

    def _block(self, begin: re.Match[str], line_start: int) -> SecretSpan | None:
        text = self._text
        gutter = _Gutter(_before(text, line_start, begin.start()), _after(text, begin.end()))
        limit = min(len(text), begin.end() + MAX_BLOCK)
        end = self._first_end(begin.end())
        # Another BEGIN marker before the END makes this one a quotation: each body is then
        # judged once, for the last BEGIN before it, however many markers come first.
        if end is not None and end.end() <= limit and self._next_begin(begin) > end.start():
            body = text[begin.end() : end.start()]
            if "-----" not in body and (
                _is_key_body(gutter.strip(body)) or _is_key_by_lines(body, whole=True)
            ):
                return SecretSpan(begin.start(), end.end(), KIND)
        if gutter:
            stop = gutter.run(text, begin.end(), limit)
        else:
            run = _BODY_RUN.match(text, begin.end(), limit)
            stop = run.end() if run else begin.end()
        body = text[begin.end() : stop]
        if not _is_key_body(gutter.strip(body)):
            # A truncated paste behind a lead that changes from line to line (a timestamp):
            # only from a marker that ends its line, so a line of markers is not walked again.
            if len(_after(text, begin.end()).strip(" \t\r\"',+;)\\")) > MAX_GUTTER:
                return None
            stop = _lines_run(text, begin.end(), limit)
            body = text[begin.end() : stop]
            if not _is_key_by_lines(body, whole=False):
                return None
        trimmed = body.rstrip(" \t\r\n\"',")
        return SecretSpan(begin.start(), begin.end() + len(trimmed), KIND)

    def _next_begin(self, begin: re.Match[str]) -> int:
        if self._begins is None:
            self._begins = [found.start() for found in _BEGIN.finditer(self._text)]
        index = bisect.bisect_right(self._begins, begin.start())
        return self._begins[index] if index < len(self._begins) else len(self._text)

    def _first_end(self, position: int) -> re.Match[str] | None:
        if self._ends is None:
            self._ends = list(_END.finditer(self._text))
            self._end_starts = [found.start() for found in self._ends]
        index = bisect.bisect_left(self._end_starts, position)
        return self._ends[index] if index < len(self._ends) else None


class _Gutter:
    """The text before and after the BEGIN marker on its line, when it wraps every line."""

    def __init__(self, before: str, after: str) -> None:
        before, after = before.strip(), after.strip()
        self.before = before if len(before) <= MAX_GUTTER else ""
        self.after = after if len(after) <= MAX_GUTTER else ""
        self._lead = re.compile(r"(?m)^[ \t]*" + re.escape(self.before)) if self.before else None
        self._tail = re.compile(re.escape(self.after) + r"[ \t\r]*$", re.M) if self.after else None

    def __bool__(self) -> bool:
        # Quotes and concatenation are a key's own syntax in code (``"…\n" +``), judged as is.
        return bool(self.before.strip("\"'+") or self.after.strip("\"'+,;)"))

    def strip(self, body: str) -> str:
        if self._tail is not None:
            body = self._tail.sub("", body)
        if self._lead is not None:
            body = self._lead.sub("", body)
        return body

    def run(self, text: str, start: int, limit: int) -> int:
        """Where a block with no END marker stops: the first line that is not gutter and body."""
        position = text.find("\n", start, limit)
        while 0 <= position < limit:
            newline = text.find("\n", position + 1, limit)
            stop = limit if newline < 0 else newline
            line = text[position + 1 : stop].strip()
            if self.before and not line.startswith(self.before):
                return position  # the gutter ends where the pasted key does
            line = self.strip(line).strip()
            if not line or _BODY_LINE.fullmatch(line) is None or _PROSE.search(line):
                return position
            position = stop if newline >= 0 else -1
        return limit


# How far from the marker a gutter is looked for. Only a short gutter counts (MAX_GUTTER), so
# reading the whole line around every marker would only make a long line of markers quadratic.
_GUTTER_WINDOW = 1024


def _before(text: str, line_start: int, marker: int) -> str:
    """The text before the marker on its line, or a long stand-in for a long stretch."""
    if marker - line_start > _GUTTER_WINDOW:
        return "-" * (MAX_GUTTER + 1)
    return text[line_start:marker]


def _after(text: str, marker_end: int) -> str:
    """The text after the marker on its line, or a long stand-in for a long stretch."""
    window = min(len(text), marker_end + _GUTTER_WINDOW)
    newline = text.find("\n", marker_end, window)
    if newline < 0 and window < len(text):
        return "-" * (MAX_GUTTER + 1)
    return text[marker_end : newline if newline >= 0 else window]


def _is_key_body(body: str) -> bool:
    body = _HEADER.sub("", body)
    if _PROSE.search(body):
        return False
    remainder = _ESCAPES.sub("", body)
    return len(remainder) >= MIN_BODY and _BASE64.fullmatch(remainder) is not None


def _is_key_by_lines(body: str, *, whole: bool) -> bool:
    """Whether every line of ``body``, each without its own lead and tail, is base64 or a
    header: a key written with a lead that changes from line to line, or a mix of leads."""
    total = 0
    for piece in _LINE_BREAK.split(body):
        rest = piece[_LINE_LEAD.match(piece).end() :]  # type: ignore[union-attr]
        rest = rest.rstrip(_LINE_TAIL)
        found = _BODY_PIECE.fullmatch(rest)
        if found is None:
            return False
        if ": " not in rest:
            total += len(rest)
    return total >= (MIN_BODY if whole else MIN_BODY + MIN_LINE)


def _lines_run(text: str, start: int, limit: int) -> int:
    """Where a block with no END marker stops when each line has a lead of its own: the first
    line that is not lead, base64 of a key's width (or a header) and tail."""
    position = text.find("\n", start, limit)
    while 0 <= position < limit:
        newline = text.find("\n", position + 1, limit)
        stop = limit if newline < 0 else newline
        line = text[position + 1 : stop]
        rest = line[_LINE_LEAD.match(line).end() :]  # type: ignore[union-attr]
        rest = rest.rstrip(_LINE_TAIL)
        if _BODY_PIECE.fullmatch(rest) is None or (": " not in rest and len(rest) < 4):
            return position
        position = stop if newline >= 0 else -1
    return limit


def _putty_key(text: str, start: int) -> SecretSpan | None:
    lines = _PUTTY_PRIVATE.search(text, start, start + 16 * 1024)
    if lines is None:
        return None
    end = lines.end()
    for _ in range(int(lines.group(1)) + 1):  # the private lines and the Private-MAC line
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    return SecretSpan(lines.end(), end, KIND)
