"""Secrets whose value is not on its name's line: configuration written across lines.

- a secret-like name whose value is on the next line or in a block below it: a YAML block
  scalar (``password: |``, ``>``, ``|-``), a YAML plain value continued on the next line, a TOML
  multi-line string (``token = \"\"\"`` … ``\"\"\"``), a value in parentheses or after a line
  continuation in code (``secret = (`` … ``)``, ``key = \\``);
- every value under ``data:`` and ``stringData:`` of a Kubernetes ``kind: Secret`` document
  (YAML or JSON), whatever its key is called: the kind says they are secrets.

Each look starts at an anchor the prefilter found (a secret-like word ending its line, or
``kind: Secret``) and reads a bounded number of lines, so its cost is per anchor.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import GENERIC, strongly_random
from safeport.shared.secret_scan.checks import INDIRECTION, looks_random
from safeport.shared.secret_scan.names import (
    name_begins,
    name_words,
    reads_as_names,
    secret_name,
    weak_secret_name,
)
from safeport.shared.secret_scan.spans import SecretSpan

KUBE_SECRET = "kubernetes-secret"  # noqa: S105 (a kind's name)
MAX_BELOW = 32  # lines of a value below its name; a longer block is a document, not a value
MAX_DOCUMENT = 256 * 1024
MAX_NAME = 64

# After a secret-like word: the rest of its name, a separator, and what opens a value below.
_OPENS_BELOW = re.compile(
    r"""[\w.\-]{0,64}\\?["']?[ \t]*(?P<sep>:|=)[ \t]*(?:"""
    r"""(?P<opening>[|>][-+0-9]{0,2}|\"\"\"|'''|\(|\\|)"""
    # Or a value begun on the name's line and continued below: a string left open (a triple
    # quote, a line continuation inside it), or closed and then concatenated or in parentheses.
    r"""|(?P<paren>\()?[ \t]*(?P<head_quote>\"\"\"|'''|["'])(?P<head>[^\s"'\\]{1,256})"""
    r"""(?P<head_end>\\|["'][ \t]*(?:\+|\\)?)?"""
    r""")[ \t]*\r?$""",
    re.MULTILINE,
)
# What stands right after the name's characters (at most 64; "" at the line's end) wherever
# _OPENS_BELOW matches: the scanner tries the pattern only after one of these. None is a name
# character, so no shorter run of the name could match either.
BELOW_STARTS = frozenset(("\\", '"', "'", " ", "\t", ":", "="))
BELOW_AFTER_BLANKS = frozenset((":", "="))  # after blanks there, the separator
# After the separator and its blanks: an opening, a quote, or the line's end ("").
BELOW_OPENS = frozenset(("|", ">", '"', "'", "(", "\\", "\r", ""))
# One line of a value continued from the line above.
_PIECE = re.compile(
    r"""[ \t]*(?:\+[ \t]*)?(?P<open>["']{0,3})(?P<value>[^\s"'\\]{1,512})(?P<close>["']{0,3})"""
    r"""[ \t]*(?P<tail>\+|\\|\)|,)?[ \t]*[);,]?[ \t]*\r?"""
)
# A quoted value that starts with an escape, up to its closing quote.
_ESCAPED_VALUE = re.compile(
    r"""[\w.\-]{0,64}\\?["']?[ \t]*(?P<sep>:|=)[ \t]*(?P<quote>["'])"""
    r"""(?P<value>(?:\\u00[0-9a-fA-F]{2}|\\x[0-9a-fA-F]{2}|[^"'\\\s]){1,512})(?P=quote)"""
)
_ESCAPE = re.compile(r"\\(?:u00|x)([0-9a-fA-F]{2})")
_NEXT_PLUS = re.compile(r"[ \t]*\+")
MAX_PIECES = 8
_VALUE_LINE = re.compile(r"""[ \t]*(?P<quote>["'`]?)(?P<value>[^\s"'`]{1,512})(?P=quote)""")
_LINE_TAIL = " \t\r,)+\\;"
_INDENT = re.compile(r"[ \t]*")

_KUBE_SECRET = re.compile(r"""["']?kind["']?[ \t]*:[ \t]*["']?Secret(?![\w-])""")
_DOCUMENT_BREAK = re.compile(r"(?m)^---[ \t]*\r?$")
# ``data:`` opening its line (YAML, JSON spread over lines), or inside a one-line JSON object.
_DATA_BLOCK = re.compile(
    r"""(?m)(?:^(?P<indent>[ \t]*)|(?<=[{,]))[ \t]*["']?(?:data|stringData)["']?[ \t]*:"""
)
_YAML_ENTRY = re.compile(
    r"""(?m)^(?P<indent>[ \t]+)["']?[\w.\-]{1,253}["']?[ \t]*:[ \t]*"""
    r"""(?P<quote>["']?)(?P<value>[^\s"'#]{1,65536}|[|>][-+0-9]{0,2})(?P=quote)[ \t]*\r?$"""
)
_JSON_ENTRY = re.compile(
    r"""["'][\w.\-]{1,253}["'][ \t]*:[ \t]*["'](?P<value>[^"'\s]{1,65536})["']"""
)


def may_be_escaped(text: str, end: int, line_end: int) -> bool:
    """A cheap first look: whether a quoted value starting with an escape follows the word."""
    quote = text.find("\\", end, min(line_end, end + 80))
    return quote > 0 and text.startswith(("\\u00", "\\x"), quote)


def may_open_below(text: str, end: int, line_end: int) -> bool:
    """A cheap first look: whether a separator and at most an opening follow the word at
    ``end`` to its line's end, so its value, if any, is below."""
    return _OPENS_BELOW.match(text, end, line_end) is not None


def below_opening(text: str, end: int, line_end: int) -> re.Match[str] | None:
    """``may_open_below``'s match itself, for ``value_below`` to start from."""
    return _OPENS_BELOW.match(text, end, line_end)


def value_below(
    text: str,
    start: int,
    end: int,
    line_start: int,
    line_end: int,
    opened: re.Match[str] | None = None,
) -> SecretSpan | None:
    """The value below the secret-like name around ``text[start:end]``, if it looks generated;
    ``opened`` is ``below_opening``'s match at ``end``, where the caller has it already."""
    after = _OPENS_BELOW.match(text, end, line_end) if opened is None else opened
    if after is None:
        return None
    if after.group("head") is not None:
        # Judged before the name: a whole value on the line (``STATS_KEY = "…"``) ends it.
        return _continued(text, after, start, line_start, line_end)
    if not _secret_name_before(text, start, line_start, after.start("sep")):
        return None
    indent = _width(text, line_start)
    opening = after.group("opening")
    position = line_end
    for _ in range(MAX_BELOW):
        if position >= len(text):
            return None
        below = position + 1
        newline = text.find("\n", below)
        position = len(text) if newline < 0 else newline
        line = text[below:position]
        if not line.strip():
            continue
        closing = opening in ('"""', "'''") and line.strip().startswith(opening)
        if closing or (opening not in ('"""', "'''", "(", "\\") and _width(text, below) <= indent):
            return None  # the block ended, or the next line is a sibling: no value below
        found = _VALUE_LINE.match(line)
        if found is None:
            return None
        rest = line[found.end() :].rstrip(_LINE_TAIL)
        if opening in ('"""', "'''"):
            rest = rest.removeprefix(opening).rstrip(_LINE_TAIL)  # closed on the value's line
        value, quoted = found.group("value"), bool(found.group("quote"))
        if opening in ("(", "\\") and not quoted:
            return None  # code: an unquoted value is a name or an expression
        if rest or not looks_random(value, quoted=quoted or bool(opening)):
            return None
        return SecretSpan(below + found.start("value"), below + found.end("value"), GENERIC)
    return None


def pieces_below(text: str, first: SecretSpan) -> list[SecretSpan]:
    """The pieces that go on with a value found alone on its line below its name (a block
    scalar's lines, a string wrapped in parentheses one piece per line, a key pasted over
    lines): each at the same indentation, alone on its line, quoted as the first is, and itself
    a long drawn run, up to an element's comma or a closing triple quote. Each is a span of its
    own, so its copies elsewhere are found as the first piece's are."""
    line_start = text.rfind("\n", 0, first.start) + 1
    line_end = text.find("\n", first.end)
    width, quoted = _width(text, line_start), text[first.start - 1 : first.start] in ("'", '"')
    if line_end < 0 or text[first.end : line_end].rstrip(" \t\r\"'").endswith(","):
        return []  # a tuple's or a list's element: the next line is another
    pieces: list[SecretSpan] = []
    for _ in range(MAX_BELOW):
        below = line_end + 1
        newline = text.find("\n", below)
        line_end = len(text) if newline < 0 else newline
        piece = _VALUE_LINE.match(text, below, line_end)
        if piece is None or _width(text, below) != width or bool(piece.group("quote")) != quoted:
            break
        tail = text[piece.end() : line_end].rstrip(" \t\r")
        value = piece.group("value")
        if (
            tail.rstrip(_LINE_TAIL + "\"'")
            or len(value) < 16
            or not looks_random(value, quoted=True)
        ):
            break
        pieces.append(SecretSpan(piece.start("value"), piece.end("value"), first.kind))
        if tail.endswith((",", '"""', "'''")):
            break
    return pieces


def _continued(
    text: str, after: re.Match[str], start: int, line_start: int, line_end: int
) -> SecretSpan | None:
    """A value begun on its name's line (``after``) and continued on the lines below it, under
    the secret-like name around the keyword at ``start``."""
    head_end = after.group("head_end") or ""
    string_open = not head_end or head_end == "\\"  # the string itself goes on below
    joined = head_end.rstrip()[-1:] in ("+", "\\") or _NEXT_PLUS.match(text, line_end + 1)
    if not string_open and not after.group("paren") and not joined:
        return None  # a whole value on one line: the assignment rules judge it
    # A weak name (``$key = '…``, a PHP or YAML string going on below) takes a value only if
    # it is strongly random, as its assignment on one line does.
    weak = not _secret_name_before(text, start, line_start, after.start("sep"))
    if weak and not _weak_name_before(text, start, line_start, after.start("sep")):
        return None
    parts = [after.group("head")]
    position, end = line_end, after.end("head")
    for _ in range(MAX_PIECES):
        if position >= len(text):
            break
        below = position + 1
        newline = text.find("\n", below)
        position = len(text) if newline < 0 else newline
        piece = _PIECE.fullmatch(text, below, position)
        if piece is None or not (string_open or piece.group("open")):
            break  # outside a string, only another string continues the value
        parts.append(piece.group("value"))
        end = piece.end("value")
        if string_open:
            if not piece.group("close"):
                continue
            string_open = False
        tail = piece.group("tail") or ""
        if tail not in ("+", "\\") and not (after.group("paren") and ")" not in text[end:position]):
            break
    value = "".join(parts)
    if len(parts) < 2 or not looks_random(value, quoted=True):
        return None
    if weak and (not strongly_random(value) or reads_as_names(value)):
        return None  # a path or a name wrapped across lines is no key
    return SecretSpan(after.start("head"), end, GENERIC)


def escaped_value_at(
    text: str, start: int, end: int, line_start: int, line_end: int
) -> SecretSpan | None:
    """A quoted value written as escapes (``"\\u0073\\u0033…"``, ``'\\x73\\x33…'``) assigned
    to the secret-like name around ``text[start:end]``: decoded, then judged as written."""
    after = _ESCAPED_VALUE.match(text, end, line_end)
    if after is None or not _secret_name_before(text, start, line_start, after.start("sep")):
        return None
    escaped = after.group("value")
    decoded = _ESCAPE.sub(lambda found: chr(int(found.group(1), 16)), escaped)
    if escaped.count("\\") < 4 or not looks_random(decoded, quoted=True):
        return None
    return SecretSpan(after.start("value"), after.end("value"), GENERIC)


def _secret_name_before(text: str, start: int, line_start: int, name_end: int) -> bool:
    name = _name_before(text, start, line_start, name_end)
    words = name_words(name)
    return bool(words) and secret_name(name, words)


def _weak_name_before(text: str, start: int, line_start: int, name_end: int) -> bool:
    words = name_words(_name_before(text, start, line_start, name_end))
    return bool(words) and weak_secret_name(words)


def _name_before(text: str, start: int, line_start: int, name_end: int) -> str:
    name_start = name_begins(text, start, line_start)
    return text[name_start:name_end].strip(" \t\"'\\.-")


class KubeSecrets:
    """The data values of the Kubernetes Secret documents of one text."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._reached = 0

    def at(self, start: int, line_start: int) -> list[SecretSpan]:
        """Every value under ``data`` and ``stringData`` of the document whose ``kind: Secret``
        is at ``start``."""
        text = self._text
        newline = text.find("\n", start)
        line_end = len(text) if newline < 0 else newline
        if start < self._reached or _KUBE_SECRET.match(text, start, line_end) is None:
            return []
        if text[line_start:start].rstrip(" \t")[-1:] not in ("", "{", ","):
            return []  # "kind" is not a name of its own: prose, or a field of something else
        low = max(0, start - MAX_DOCUMENT, self._reached)
        for found in _DOCUMENT_BREAK.finditer(text, low, start):
            low = found.end()
        high_break = _DOCUMENT_BREAK.search(text, start, start + MAX_DOCUMENT)
        high = high_break.start() if high_break else min(len(text), start + MAX_DOCUMENT)
        self._reached = high
        spans: list[SecretSpan] = []
        for block in _DATA_BLOCK.finditer(text, low, high):
            spans += _data_values(text, block, high)
        return spans


def _data_values(text: str, block: re.Match[str], high: int) -> list[SecretSpan]:
    """The values of the mapping opened by ``block`` (``data:``), up to its end."""
    inline = block.group("indent") is None
    if inline or text[block.end() : block.end() + 8].lstrip().startswith("{"):
        closing = text.find("}", block.end(), high)
        stop = high if closing < 0 else closing
        return [
            SecretSpan(m.start("value"), m.end("value"), KUBE_SECRET)
            for m in _JSON_ENTRY.finditer(text, block.end(), stop)
            if not INDIRECTION.search(m.group("value"))
        ]
    indent = len(block.group("indent"))
    spans: list[SecretSpan] = []
    position = text.find("\n", block.end(), high)
    scalar_indent = -1  # inside a block scalar value: lines deeper than its entry
    while 0 <= position < high:
        below = position + 1
        newline = text.find("\n", below, high)
        position = newline if newline >= 0 else -1
        stop = high if newline < 0 else newline
        if not text[below:stop].strip():
            continue
        width = _width(text, below)
        if width <= indent:
            break
        if scalar_indent >= 0 and width > scalar_indent:
            spans.append(SecretSpan(below + width, stop, KUBE_SECRET))
            continue
        scalar_indent = -1
        entry = _YAML_ENTRY.match(text, below, stop)
        if entry is None:
            continue
        value = entry.group("value")
        if value[0] in "|>" and not entry.group("quote"):
            scalar_indent = width
        elif not INDIRECTION.search(value):
            spans.append(SecretSpan(entry.start("value"), entry.end("value"), KUBE_SECRET))
    return spans


def _width(text: str, line_start: int) -> int:
    return _INDENT.match(text, line_start).end() - line_start  # type: ignore[union-attr]


# Bitnami's SealedSecret: each value of ``encryptedData`` is ciphertext for the controller's key
# (a version byte 2, so ``Ag…`` in base64), which only the cluster can open. It is what the
# tool is for putting in a repository; the credential is the controller's private key.
_SEALED_VALUE = re.compile(r"[\"']?Ag[A-Za-z0-9+/]{60,}")
_SEALED_PARENT = re.compile(r"[ \t]*[\"']?encryptedData[\"']?[ \t]*:")


def sealed_ciphertext(text: str, start: int) -> bool:
    """Whether the value at ``start`` is a SealedSecret's ciphertext: ``Ag…`` base64 under an
    ``encryptedData`` key less indented than its own line (YAML), or inside its object (JSON)."""
    if _SEALED_VALUE.match(text, start) is None:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    opened = text.rfind("encryptedData", max(0, start - 4096), start)
    if opened < 0:
        return False
    if opened >= line_start or ("{" in text[opened:start] and "}" not in text[opened:start]):
        return True  # on the value's line, or the JSON object it opens
    indent = len(text[line_start:start]) - len(text[line_start:start].lstrip(" "))
    position = line_start
    while position > opened:  # the nearest line above that is less indented is the parent
        above = text.rfind("\n", 0, position - 1) + 1
        line = text[above : position - 1]
        if line.strip() and len(line) - len(line.lstrip(" ")) < indent:
            return _SEALED_PARENT.match(line) is not None
        position = above
    return False
