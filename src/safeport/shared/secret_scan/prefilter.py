"""The one pass every text pays: where any rule's anchor or a secret-like word occurs.

All literals go into one Aho-Corasick automaton (``ahocorasick_rs``, Rust): a single linear pass
whatever the number of literals, reporting overlapping hits too, so no anchor hides another. On
the development machine CPython's ``re`` managed 3 to 5 MB/s for the same ~170 literals as one
alternation (and ``str.find`` per literal about as much), against 30 to 40 MB/s for the automaton
under the same load (``benchmarks/bench_secret_scan.py`` keeps the figures). Words are matched in
their three usual spellings (``token``, ``Token``, ``TOKEN``), which is what camelCase, snake_case
and environment names use.

ASCII text (most code) goes to Hyperscan instead where its wheel is installed: the same literals,
the same hits (every occurrence of every literal, overlapping ones too), found with SIMD about
three times as fast as the automaton's DFA on the 132 KiB a ``read_file`` judges
(``docs/measurements/secret-scan.md``). Text that is not ASCII keeps the automaton, whose offsets
are character offsets; Hyperscan's would be UTF-8 byte offsets.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass
from typing import Any

import ahocorasick_rs

from safeport.shared.secret_scan.names import MISSPELLINGS, TRANSLATIONS
from safeport.shared.secret_scan.pairs import POSITIONAL_CALLS
from safeport.shared.secret_scan.passwords import ORDINARY_PREFIXES
from safeport.shared.secret_scan.providers.rules import RULES, TokenRule
from safeport.shared.secret_scan.shapes import SHAPE_ANCHORS

WORDS = (
    *("pass", "pw", "secret", "token", "auth", "cred", "bearer", "salt", "nonce"),
    *MISSPELLINGS,
    *TRANSLATIONS,
)
# Words that name a secret as often as something else (``key = "…"``, ``gateway_api = "…"``):
# only an assignment of a strongly random value is taken (``assignments.weak_secret_name``).
WEAK_WORDS = ("key", "api", "seed")
# Compound names in every spelling of each half joined three ways: code writes ``api_key``,
# ``apiKey`` and ``API_KEY``, and HTTP header names (case-blind on the wire) come as
# ``X-API-Key``, ``x-api-key`` or ``X-Api-Key``. The automaton matches case exactly, so each
# spelling is a literal of the same one pass.
COMPOUND_WORDS = (
    *(
        first + joint + second
        for left, right in (("api", "key"), ("access", "key"), ("private", "key"))
        for first in (left, left.capitalize(), left.upper())
        for joint in ("", "_", "-", " ")  # the last for prose: "access key: …"
        for second in (right, right.capitalize(), right.upper())
    ),
    "_KEY",
    "_PAT",  # a personal access token: GITHUB_PAT, AZURE_DEVOPS_EXT_PAT (``names.secret_name``)
    # A header's last word: X-Service-Key, x-tenant-key.
    "-Key",
    "-key",
    "-KEY",
)
KEY_BLOCK_ANCHORS = ("PRIVATE KEY", "BEGIN SSH2 ENCRYPTED", "PuTTY-User-Key-File")
URL_ANCHOR = "://"
# Clients that take a password in a shape of their own (``mysql -pS3cret``, also ``mysqldump``
# and ``mysqladmin``; ``sshpass -p``; ``curl -u user:…``; PowerShell's secure strings) and SQL's
# ``IDENTIFIED BY``: the flags alone are too common literals to anchor on (``commands.py``).
COMMAND_ANCHORS = (
    "mysql",
    "sshpass",
    "login",
    "sqlcmd",
    "redis-cli",
    "ssh-keygen",
    "curl",
    "ConvertTo-SecureString",
    "convertto-securestring",
    "CONVERTTO-SECURESTRING",
    "identified",
    "Identified",
    "IDENTIFIED",
    # htpasswd's batch mode, OpenLDAP's clients' ``-w``, Windows' ``net use``, HTTPie's
    # ``-a user:…``, ``wandb login <key>``.
    "htpasswd",
    *("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldappasswd", "ldapwhoami"),
    *("net use", "NET USE", "Net Use"),
    *(f"{client} {flag}" for client in ("http", "https") for flag in ("-a", "--auth")),
    "wandb login",
    "sqlplus",
    # HTTP captures: a Cookie or Set-Cookie header and an Authorization header, as a line or as a
    # HAR / JSON name and value pair (``http_captures`` in ``commands.py``).
    *("Cookie", "cookie", "COOKIE", "Authorization", "authorization", "AUTHORIZATION"),
    # A plist key's string on the lines below, a settings row's value named in its WHERE
    # clause, connection strings without a scheme and .pgpass lines (``sql.py``).
    "</key>",
    *("WHERE", "where", "Where"),
    *("@tcp(", "@unix(", "@//", ":1521", ":5432:", ":*:"),
    # Wi-Fi pre-shared keys (wpa_supplicant.conf, NetworkManager's keyfiles).
    *("psk=", "psk ="),
)
# Characters a reader drops without noticing, which split a token for every rule: the scanner
# judges the lines around each again without them (``scanner.py``). NUL (UTF-16 read as UTF-8)
# and JSON's escaped slash are ASCII; the rest (zero-width and joiners, soft hyphen, BOM,
# variation selectors, combining marks) are only looked for in text that is not ASCII.
HIDDEN_ASCII = ("\x00", "\\/")
HIDDEN = tuple(
    chr(code)
    for low, high in (
        (0xAD, 0xAD),
        (0x34F, 0x34F),
        (0x61C, 0x61C),
        (0x115F, 0x1160),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x206F),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF),
        (0x300, 0x36F),
        (0x1AB0, 0x1AFF),
        (0x1DC0, 0x1DFF),
        (0x20D0, 0x20FF),
        (0xFE20, 0xFE2F),
    )
    for code in range(low, high + 1)
)


@dataclass(frozen=True, slots=True)
class Anchor:
    """What a literal wakes: the provider rules it anchors, or one of the contextual checks."""

    rules: tuple[TokenRule, ...] = ()
    word: bool = False
    weak: bool = False  # a word of WEAK_WORDS: only its own name's end is judged
    # Words a check treats apart, known here so the scanner reads a flag instead of comparing
    # the hit's text: "pass" (netrc's "password s3cr3t" needs no sign), "bearer" (a header's
    # token), and the words that begin longer ordinary ones (``passwords.ordinary_pass_word``).
    pass_word: bool = False
    bearer: bool = False
    ordinary_prefix: bool = False
    url: bool = False
    key_block: bool = False
    hidden: bool = False
    command: bool = False
    call: bool = False  # a call whose signature places its password (``pairs.positional_at``)
    shape: str = ""  # a finder that reads across lines or through an encoding (``shapes.py``)


def _table() -> tuple[list[str], list[Anchor]]:
    rules: dict[str, list[TokenRule]] = {}
    for rule in RULES:
        for literal in rule.anchors:
            rules.setdefault(literal, []).append(rule)
    anchors = {literal: Anchor(rules=tuple(found)) for literal, found in rules.items()}
    words = [
        spelling
        for word in (*WORDS, *WEAK_WORDS)
        for spelling in (word, word.capitalize(), word.upper())
    ]
    weak = {spelling for word in WEAK_WORDS for spelling in (word, word.capitalize(), word.upper())}
    for literal in [*words, *COMPOUND_WORDS]:
        found = anchors.get(literal, Anchor()).rules
        anchors[literal] = Anchor(
            rules=found,
            word=True,
            weak=literal in weak,
            pass_word=literal.lower() == "pass",
            bearer=literal.lower() == "bearer",
            ordinary_prefix=literal in ORDINARY_PREFIXES,
        )
    for literal in KEY_BLOCK_ANCHORS:
        anchors[literal] = Anchor(key_block=True)
    anchors[URL_ANCHOR] = Anchor(url=True)
    for literal, shape in SHAPE_ANCHORS.items():
        anchors[literal] = Anchor(rules=anchors.get(literal, Anchor()).rules, shape=shape)
    for literal in COMMAND_ANCHORS:
        anchors[literal] = Anchor(rules=anchors.get(literal, Anchor()).rules, command=True)
    for literal in POSITIONAL_CALLS:
        anchors[literal] = Anchor(rules=anchors.get(literal, Anchor()).rules, call=True)
    for literal in (*HIDDEN_ASCII, *HIDDEN):  # the non-ASCII ones last: see _ASCII_AUTOMATON
        anchors[literal] = Anchor(hidden=True)
    # Every ASCII literal before every other: the ASCII automaton's indexes are then the same
    # as the full one's (a word in another script, like a hidden character, comes last).
    ordered = sorted(anchors.items(), key=lambda item: not item[0].isascii())
    return [literal for literal, _ in ordered], [anchor for _, anchor in ordered]


LITERALS, ANCHORS = _table()
# A DFA: more memory than the default NFA (a few hundred KiB for these literals) for about three
# times the speed; the pass is most of what a clean file costs. ASCII text (most code) goes to
# the bytes automaton, whose offsets are then character offsets too, which spares the text
# automaton's encoding to UTF-8 and mapping of every offset back.
_DFA = ahocorasick_rs.Implementation.DFA
_AUTOMATON = ahocorasick_rs.AhoCorasick(LITERALS, implementation=_DFA)
_ASCII_LITERALS = [literal.encode("ascii") for literal in LITERALS if literal.isascii()]
_ASCII_AUTOMATON = ahocorasick_rs.BytesAhoCorasick(_ASCII_LITERALS, implementation=_DFA)


class _LiteralScan:
    """The ASCII literals as one Hyperscan database: each occurrence of each literal, as
    (index, start, end) like the automaton's, the start known from the literal's length.
    Hyperscan is imported and the database compiled at the first scan (some 30 ms), not by
    every command that imports the detector; if either fails (a wheel this processor cannot
    run), every scan is the automaton's, as where no wheel installs."""

    def __init__(self, literals: list[bytes]) -> None:
        self._literals = literals
        self._lengths = [len(literal) for literal in literals]
        self._database: Any = None
        self._failed = False
        self._compiling = threading.Lock()
        # A scan needs scratch space no other scan uses at the same time: one per thread.
        self._local = threading.local()

    def _compiled(self) -> Any:
        with self._compiling:
            if self._database is None and not self._failed:
                # Every byte written as an escape: the literals hold regex syntax (``1|``,
                # ``SG.``) and a NUL, which the pure-literal compiler would read as the end.
                patterns = [
                    "".join(f"\\x{byte:02x}" for byte in literal).encode()
                    for literal in self._literals
                ]
                try:
                    hyperscan = importlib.import_module("hyperscan")
                    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                    database.compile(
                        expressions=patterns, ids=list(range(len(patterns))), elements=len(patterns)
                    )
                    self._database = (database, hyperscan.Scratch)
                except Exception:  # the automaton finds the same hits
                    self._failed = True
            return self._database

    def find(self, data: bytes) -> list[tuple[int, int, int]] | None:
        """The hits in ``data`` as (start, end, index), or None where Hyperscan cannot run."""
        local = self._local
        if not hasattr(local, "scratch"):
            compiled = self._compiled()
            if compiled is None:
                return None
            local.database, scratch = compiled
            local.scratch = scratch(local.database)
        found: list[tuple[int, int, int]] = []
        lengths = self._lengths

        def on_match(index: int, _from: int, to: int, _flags: int, _context: object) -> None:
            found.append((to - lengths[index], to, index))

        local.database.scan(data, match_event_handler=on_match, scratch=local.scratch)
        return found


# Where no wheel installs (``pyproject.toml``), the automaton alone.
_HYPERSCAN = importlib.util.find_spec("hyperscan") is not None
_LITERAL_SCAN = _LiteralScan(_ASCII_LITERALS) if _HYPERSCAN else None


def hits(text: str, ascii_bytes: bytes | None = None) -> list[tuple[int, int, Anchor]]:
    """Each anchor occurrence in ``text`` as (start, end, what it wakes), in text order.
    ``ascii_bytes``: the text already encoded, where the caller knows it is ASCII (a large
    text's digest is taken of the same bytes), so it is not encoded twice."""
    try:
        if ascii_bytes is not None or text.isascii():
            data = text.encode("ascii") if ascii_bytes is None else ascii_bytes
            scanned = None if _LITERAL_SCAN is None else _LITERAL_SCAN.find(data)
            found = (
                _by_start(_ASCII_AUTOMATON.find_matches_as_indexes(data, overlapping=True))
                if scanned is None
                else scanned
            )
        else:
            found = _by_start(_AUTOMATON.find_matches_as_indexes(text, overlapping=True))
    except UnicodeEncodeError:
        # A lone surrogate (bytes that were not UTF-8, decoded with surrogateescape) cannot
        # cross into the automaton; one U+FFFD in its place keeps every index where it was, and
        # a scan that fails would serve the text unscanned.
        clean = "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)
        found = _by_start(_AUTOMATON.find_matches_as_indexes(clean, overlapping=True))
    if not found:
        return []
    # By start, then end: the automaton reports in order of end, so this is the order its hits
    # always had (a start shared by two literals, ``api`` and ``api_key``, shorter first), and
    # Hyperscan's come in the same order whatever order it reports them in. No two hits share
    # both (the same span of text is the same literal), so the index is never compared.
    found.sort()
    anchors = ANCHORS
    if _SELF_OVERLAPPING.isdisjoint([index for _, _, index in found]):
        return [(start, end, anchors[index]) for start, end, index in found]
    kept = []
    ends: dict[int, int] = {}
    for start, end, index in found:
        # A literal found again inside itself ("AAAAAAAAAA" along a run of A's) wakes nothing
        # its first hit did not: every rule starts at its anchor behind a boundary, or searches
        # the anchor's whole line. A megabyte of one letter is one hit, not a million. Only a
        # literal whose start is also its end (``AKIA``, ``MzMz``) can be found inside itself.
        if index in _SELF_OVERLAPPING:
            if start < ends.get(index, -1):
                continue
            ends[index] = end
        kept.append((start, end, anchors[index]))
    return kept


def _by_start(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The automaton's (index, start, end) as (start, end, index), like Hyperscan's."""
    return [(start, end, index) for index, start, end in found]


def _self_overlapping(literal: str) -> bool:
    return any(literal[:size] == literal[-size:] for size in range(1, len(literal)))


_SELF_OVERLAPPING = frozenset(
    index for index, literal in enumerate(LITERALS) if _self_overlapping(literal)
)
