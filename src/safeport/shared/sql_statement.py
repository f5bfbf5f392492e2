"""A declared SQL statement, read as PostgreSQL reads its text (pure, no I/O).

The statement a policy declares is checked here before it is ever accepted, and rendered here
for the driver. The guard that holds is the database's (a ``READ ONLY`` transaction, a role
without write privileges); this reading refuses early, in words, what could only fail there,
and what a keyword filter in front of a database was bypassed with: a second statement after a
``;``, a write hidden in a CTE, a lock taken with ``FOR UPDATE``, a function that reads server
files. Strings, quoted identifiers and comments are skipped as PostgreSQL skips them, so a word
inside them never counts and one outside them is never hidden.

Parameters are ``{name}`` outside strings and comments; :func:`driver_text` turns each into the
driver's placeholder, so values are always bound by the extended protocol, never spliced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Statements a read-only action may begin with (DECLARE … CURSOR FOR accepts only these).
READING_STARTS = frozenset({"select", "with", "values", "table"})
# Words that write, take locks, end or change the transaction, or run other statements: none
# belongs in a query that only reads (quote an identifier, "update", to use one as a name).
REFUSED_WORDS = frozenset(
    {
        "insert", "update", "delete", "merge", "truncate", "copy", "into", "share", "nowait",
        "lock", "commit", "rollback", "savepoint", "begin", "set", "call", "execute", "prepare",
        "grant", "revoke", "create", "alter", "drop", "listen", "notify", "vacuum",
        "uescape",
    }
)  # fmt: skip
# Functions with side effects or file, network or timing access (the database refuses most of
# them to a least-privileged role in a read-only transaction; this refuses them in words).
REFUSED_FUNCTIONS = re.compile(
    r"^(pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|lo_\w+|set_config|pg_sleep\w*"
    r"|dblink\w*|pg_terminate_backend|pg_cancel_backend|pg_reload_conf|pg_rotate_logfile"
    r"|pg_switch_wal|pg_create_\w+|pg_drop_\w+|pg_advisory\w*|pg_try_advisory\w*|nextval|setval"
    r"|pg_notify|pg_file_\w+|query_to_xml\w*|table_to_xml\w*|cursor_to_xml\w*|database_to_xml\w*"
    r"|schema_to_xml\w*|txid_current|pg_current_xact_id|pg_logical_emit_message"
    # These run a query given as text: a bound value would become a statement of the agent's.
    r"|ts_stat|ts_rewrite)$"
)
_UNICODE_ESCAPE = re.compile(r"\\(?:([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6}))")
# A string followed by a newline (and maybe comments) and another string is one string.
_CONTINUED = re.compile(r"(?:[ \t\f]|--[^\n\r]*)*[\n\r](?:[ \t\n\r\f]+|--[^\n\r]*[\n\r])*'")
_NEWLINE = re.compile(r"[\n\r]")
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]{0,63})\}")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# A tag's letters include every character outside ASCII, as the server's lexer reads them.
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z0-9_\x80-\U0010ffff]*)?\$")


class StatementRefused(ValueError):
    """The statement cannot be declared; the message says why, in words."""


@dataclass(frozen=True)
class Piece:
    """A run of the statement's text: ``code`` (read for words) or ``quoted`` (a string, a
    quoted identifier or a comment: kept as it is, never read for words or parameters)."""

    kind: str
    text: str


def pieces(statement: str) -> list[Piece]:
    """The statement split as PostgreSQL's lexer splits it; an unterminated string, quoted
    identifier or comment is refused (the server would read the rest differently)."""
    out: list[Piece] = []
    code_start = i = 0
    n = len(statement)
    while i < n:
        end = _quoted_end(statement, i)
        if end is None:
            i += 1
            continue
        if i > code_start:
            out.append(Piece("code", statement[code_start:i]))
        out.append(Piece("quoted", statement[i:end]))
        i = code_start = end
    if code_start < n:
        out.append(Piece("code", statement[code_start:]))
    return out


def check_statement(statement: str, params: frozenset[str]) -> None:
    """Refuse a statement that is not one read-only query over exactly ``params``."""
    if "\v" in statement:
        # Whitespace to one server version, not to another: read here either way, it could hide.
        raise StatementRefused("a statement may hold no vertical tab")
    parts = pieces(statement)
    code = " ".join(piece.text for piece in parts if piece.kind == "code")
    if ";" in code:
        raise StatementRefused("a statement may hold no `;` (one statement per query)")
    words = [word.lower() for word in _WORD.findall(_PLACEHOLDER.sub(" ", code))]
    if not words or words[0] not in READING_STARTS:
        raise StatementRefused("a statement must begin with SELECT, WITH, VALUES or TABLE")
    refused = sorted({word for word in words if word in REFUSED_WORDS})
    if refused:
        raise StatementRefused(
            f"a read-only query may not use {', '.join(w.upper() for w in refused)}"
            ' (write a column of that name in double quotes: "update")'
        )
    # A quoted identifier names the same function: "pg_sleep"(9), U&"pg\\005fsleep"(9).
    names = words + [_identifier(parts, k) for k, part in enumerate(parts) if _is_ident(part)]
    functions = sorted({word for word in names if REFUSED_FUNCTIONS.match(word)})
    if functions:
        raise StatementRefused(
            f"a read-only query may not call {', '.join(functions)} (side effects, locks, or "
            "access to files, the network or time)"
        )
    used = {
        name for part in parts if part.kind == "code" for name in _PLACEHOLDER.findall(part.text)
    }
    if used - params:
        raise StatementRefused(f"the statement uses undeclared params: {sorted(used - params)}")
    if params - used:
        unused = sorted(params - used)
        raise StatementRefused(f"params declared but never used in the statement: {unused}")


def _is_ident(piece: Piece) -> bool:
    return piece.kind == "quoted" and piece.text.startswith('"')


def _identifier(parts: list[Piece], k: int) -> str:
    """The name a quoted identifier stands for (case kept, as PostgreSQL keeps it)."""
    name = parts[k].text[1:-1].replace('""', '"')
    if k > 0 and parts[k - 1].kind == "code" and parts[k - 1].text.lower().endswith("u&"):
        name = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), name)
    return name


def driver_text(statement: str) -> str:
    """The statement for psycopg: ``{name}`` → ``%(name)s`` in code, every other ``%`` doubled
    (psycopg reads ``%`` everywhere in a query that has parameters, strings included)."""
    out: list[str] = []
    for piece in pieces(statement):
        text = piece.text.replace("%", "%%")
        if piece.kind == "code":
            text = _PLACEHOLDER.sub(r"%(\1)s", text)
        out.append(text)
    return "".join(out)


def _quoted_end(text: str, i: int) -> int | None:
    """Where the string, quoted identifier or comment starting at ``i`` ends (None: none
    starts there)."""
    char = text[i]
    if char in "'\"":
        escapes = char == "'" and i > 0 and text[i - 1] in "eE" and not _word_before(text, i - 1)
        return _closing_quote(text, i, char, escapes)
    if text.startswith("--", i):
        newline = _NEWLINE.search(text, i)  # the server ends a line comment at \n or \r
        return len(text) if newline is None else newline.end()
    if text.startswith("/*", i):
        return _block_comment_end(text, i)
    if char == "$" and not _word_before(text, i):
        tag = _DOLLAR_TAG.match(text, i)
        if tag is None:
            return None
        close = text.find(tag.group(0), tag.end())
        if close < 0:
            raise StatementRefused("a dollar-quoted string is not closed")
        return close + len(tag.group(0))
    return None


def _word_before(text: str, i: int) -> bool:
    """Whether ``text[i - 1]`` continues a name, as PostgreSQL's lexer reads one: any character
    outside ASCII does (``v€$a$`` is one name, not ``v€`` and a dollar quote)."""
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_$" or ord(text[i - 1]) > 127)


def _closing_quote(text: str, i: int, quote: str, escapes: bool) -> int:
    j = i + 1
    while j < len(text):
        if escapes and text[j] == "\\":
            j += 2
            continue
        if text[j] == quote:
            if text.startswith(quote * 2, j):
                j += 2  # a doubled quote is one quote character inside
                continue
            going_on = _CONTINUED.match(text, j + 1) if escapes else None
            if going_on is not None:
                j = going_on.end()  # the server reads on, with the same escapes
                continue
            return j + 1
        j += 1
    raise StatementRefused("a quoted string or identifier is not closed")


def _block_comment_end(text: str, i: int) -> int:
    depth, j = 0, i
    while j < len(text):
        if text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    raise StatementRefused("a /* comment is not closed")
