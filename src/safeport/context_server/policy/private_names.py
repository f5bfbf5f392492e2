"""How a name is compared with the private rules: normalised, undecorated, matched by shape.

Pure functions over one name; the rules themselves are the data in ``policy_tables.py`` and
the user's additions in :class:`~safeport.context_server.policy.read_policy.ReadPolicy`.

Names are compared after NFC normalisation and casefolding: ``.ENV`` on a case-sensitive disk is
still an environment file, and a decomposed ``é`` (NFD, as macOS writes it) matches the composed
one a user typed into ``context.toml``.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable

from safeport.context_server.policy.tables import (
    COMPRESSED,
    COPY_NUMBER,
    CREDENTIALS_FILE,
    DECORATION_AROUND,
    DECORATION_WORDS,
    KEY_SEGMENTS,
    NUMBERED_BACKUP,
    SECRET_DATA_FILE,
    SSH_KEY_NAME,
)

# A hostile name costs at most this many undecorated forms.
MAX_FORMS = 64


def normalise(name: str) -> str:
    """The form names are compared in: NFC, then casefolded."""
    return unicodedata.normalize("NFC", name).casefold()


def undecorated_forms(name: str) -> list[str]:
    """The normalised name and every form left by stripping editor/backup decorations.

    Invisible format characters and surrounding blanks or dots are dropped first: `.env ` and
    `.env\u200b` are the same file to a person reading a listing. Decorations nest in any
    order (`.#.aws#.swp~`), and stripping one can hide another, so every way of stripping is
    followed, not only the first that applies (bounded: a hostile name costs a few dozen forms).
    """
    folded = normalise(name)
    if not folded.isascii() and any(unicodedata.category(ch) == "Cf" for ch in folded):
        folded = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    forms = [folded]
    seen = {folded}
    frontier = [folded]
    while frontier and len(forms) < MAX_FORMS:
        form = frontier.pop(0)
        for stripped in _strip_options(form):
            if stripped and stripped not in seen and len(forms) < MAX_FORMS:
                seen.add(stripped)
                forms.append(stripped)
                frontier.append(stripped)
    return forms


def is_builtin_secret_form(form: str) -> bool:
    """The rules no glob can say: key names by key type, secret data files, credential files,
    and a key extension anywhere after the first dot."""
    if SSH_KEY_NAME.fullmatch(form) or SECRET_DATA_FILE.fullmatch(form):
        return True
    if CREDENTIALS_FILE.fullmatch(form):
        return True
    segments = form.split(".")
    return any(seg in KEY_SEGMENTS for seg in segments[1:])


class NameGlobs:
    """fnmatch globs split by shape, so the common ones cost a set lookup or a str method:
    exact names, ``*<suffix>``, ``<prefix>*``; only the rest go through one regex."""

    def __init__(self, patterns: Iterable[str]) -> None:
        exact: set[str] = set()
        suffixes: list[str] = []
        prefixes: list[str] = []
        other: list[str] = []
        for pattern in patterns:
            body = pattern[1:] if pattern.startswith("*") else pattern
            head = pattern[:-1] if pattern.endswith("*") else pattern
            if not _has_wildcard(pattern):
                exact.add(pattern)
            elif pattern.startswith("*") and not _has_wildcard(body):
                suffixes.append(body)
            elif pattern.endswith("*") and not _has_wildcard(head):
                prefixes.append(head)
            else:
                other.append(pattern)
        self.exact = frozenset(exact)
        self.suffixes = tuple(suffixes)
        self.prefixes = tuple(prefixes)
        joined = "|".join(f"(?:{fnmatch.translate(p)})" for p in other)
        self.other = re.compile(joined or r"(?!)", re.DOTALL)

    def match(self, name: str) -> bool:
        return (
            name in self.exact
            or name.endswith(self.suffixes)
            or name.startswith(self.prefixes)
            or self.other.match(name) is not None
        )


def _has_wildcard(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _strip_options(form: str) -> list[str]:
    """Each form one decoration shorter than ``form``."""
    options = []
    trimmed = form.lstrip(" \t").rstrip(" \t.")  # never a leading dot: `.env ` is `.env`
    if trimmed and trimmed != form:
        options.append(trimmed)
    first, last = form[:1], form[-1:]
    if first in (".", "#", "c", "b"):
        options += [m.group(1) for around in DECORATION_AROUND if (m := around.match(form))]
    if last == "~":
        m = NUMBERED_BACKUP.search(form)
        options.append(form[: m.start()] if m else form[:-1])
    if last == ")" and (m := COPY_NUMBER.search(form)):
        options.append(form[: m.start()])
    cut = max(form.rfind(sep) for sep in "._- ")
    if cut > 0:
        tail = form[cut + 1 :]
        if tail in DECORATION_WORDS or tail.isdigit() or (form[cut] == "." and tail in COMPRESSED):
            options.append(form[:cut])
    return options
