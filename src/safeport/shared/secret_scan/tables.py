"""Markdown tables: the secrets in the column whose header cell names one."""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import GENERIC
from safeport.shared.secret_scan.checks import looks_random
from safeport.shared.secret_scan.names import name_words, secret_name
from safeport.shared.secret_scan.passwords import chosen_password, password_name
from safeport.shared.secret_scan.spans import SecretSpan

# A Markdown table: a header row naming a secret in one of its cells, a row of dashes under it,
# then the rows whose cell in that column holds the secret (``| prod | root | … |``).
_TABLE_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?[ \t]*)?\r?$")
_TABLE_ROWS = 200
_CELL_VALUE = re.compile(r"[ \t]*(?P<tick>`?)(?P<value>[^\s|`]{1,256})(?P=tick)[ \t]*\Z")


def table_column_at(text: str, start: int, line_start: int, line_end: int) -> list[SecretSpan]:
    """The secrets in the column of a Markdown table whose header cell holds the keyword at
    ``start``, when that cell names a secret."""
    row = text[line_start:line_end]
    if not row.lstrip().startswith("|"):
        return []
    cells = row.split("|")
    column = text.count("|", line_start, start)
    name = cells[column].strip().strip("*_`")
    words = name_words(name)
    if not words or not secret_name(name, words) or len(words) > 3:
        return []
    rule_end = text.find("\n", line_end + 1)
    rule_end = len(text) if rule_end < 0 else rule_end
    if not _TABLE_RULE.match(text[line_end + 1 : rule_end]):
        return []
    spans: list[SecretSpan] = []
    at = rule_end + 1
    for _ in range(_TABLE_ROWS):
        if at >= len(text):
            break
        newline = text.find("\n", at)
        newline = len(text) if newline < 0 else newline
        if not text[at:newline].lstrip().startswith("|"):
            break
        bounds = [at - 1, *(i for i in range(at, newline) if text[i] == "|"), newline]
        if column + 1 < len(bounds):
            found = _CELL_VALUE.match(text, bounds[column] + 1, bounds[column + 1])
            if found is not None and _cell_secret(found.group("value"), name, words):
                spans.append(SecretSpan(found.start("value"), found.end("value"), GENERIC))
        at = newline + 1
    return spans


def _cell_secret(value: str, name: str, words: list[str]) -> bool:
    if password_name(words) and chosen_password(value, name):
        return True
    return looks_random(value, quoted=True) and value.lower() not in name.lower()
