"""How a name is compared with the private rules: normalised, undecorated, matched by shape.

Pure functions over one name; the rules themselves are the data in ``private_tables.py`` and
the user's additions in :class:`~safeport.context_server.policy.read_policy.ReadPolicy`.

Names are compared after NFC normalisation and casefolding: ``.ENV`` on a case-sensitive disk is
still an environment file, and a decomposed ``é`` (NFD, as macOS writes it) matches the composed
one a user typed into ``context.toml``.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable, Sequence

from safeport.context_server.policy.private_tables import (
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
    and a key extension anywhere after the first dot.

    A key's public half (``id_ed25519.pub``, ``deploy_rsa-cert.pub``) and a name ending in
    ``.pem`` are not secret by name: their content decides (``public_material.py``)."""
    if SECRET_DATA_FILE.fullmatch(form) or CREDENTIALS_FILE.fullmatch(form):
        return True
    if SSH_KEY_NAME.fullmatch(form) and not form.endswith(".pub"):
        return True
    segments = form.split(".")[1:]
    if segments and segments[-1] == "pem":
        segments.pop()
    return any(seg in KEY_SEGMENTS for seg in segments)


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


class PathGlobs:
    """``[private]`` patterns holding ``/``: globs over a path relative to its root.

    ``*``, ``?`` and ``[…]`` stay inside one component; ``**`` as a whole component stands for
    any number of folders (none included): ``config/prod/*.yaml`` names the files of one folder,
    ``**/secrets/*.json`` those of every ``secrets`` folder. A pattern that names a folder hides
    everything below it, and each component is compared in its normalised, undecorated forms
    (``config/prod/app.yaml~`` is the same file to a reader).
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        joined = "|".join(f"(?:{_path_regex(p)})" for p in self.patterns)
        self._regex = re.compile(joined, re.DOTALL) if joined else None

    def match(self, parts: Sequence[str]) -> bool:
        """Whether the path ``parts`` (relative to its root), or a folder above it, matches."""
        if self._regex is None:
            return False
        folded = [normalise(part) for part in parts]
        for depth in range(1, len(folded) + 1):
            above = "/".join(folded[: depth - 1])
            for form in undecorated_forms(parts[depth - 1]):
                if self._regex.fullmatch(f"{above}/{form}" if above else form):
                    return True
        return False


def path_pattern_problem(pattern: str) -> str | None:
    """Why a pattern holding ``/`` cannot be a path pattern, or None."""
    segments = pattern.strip("/").split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        return "a path pattern has no empty, `.` or `..` components (it is relative to the root)"
    if any("**" in segment and segment != "**" for segment in segments):
        return "`**` stands only as a whole component (`**/name`, `folder/**`)"
    return None


def _path_regex(pattern: str) -> str:
    segments = pattern.strip("/").split("/")
    out = []
    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if segment == "**":
            out.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(segment) + ("" if last else "/"))
    return "".join(out)


def _segment_regex(segment: str) -> str:
    out = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            if body.startswith("^"):
                body = "\\" + body  # a literal caret, not a negation
            out.append(f"[{'^/' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)
