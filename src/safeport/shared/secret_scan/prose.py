"""Secrets written in context without an assignment of code's own shape: the ways prose, docs,
macros, markup and lookups with a default name a secret before its value.

- prose and tickets: ``password is …``, ``the token was …``, a name of two or three words
  (``Secret Key: …``, ``access key = …``, ``Authentication key: …``);
- macros and built-ins that separate with a space: ``#define PASSWORD "…"``, ``%define``,
  ``%global``, ``set password "…"``, ``setx API_TOKEN …``, a Dockerfile's ``ENV PASSWORD …``,
  Lisp's ``(setq password "…")``, Clojure's ``{:password "…"}``;
- a setter or builder given a literal: ``setPassword("…")``, ``.withApiKey('…')``;
- markup whose element carries attributes or holds its value on a line of its own:
  ``<password name="db">…</password>``, ``<Token>`` / value / ``</Token>``;
- a lookup with a literal default, where the default is the secret:
  ``os.environ.get("DB_PASS") or "…"``, ``getenv("X", "…")``, ``config.get(…, default="…")``.

Each look starts at a keyword the prefilter found and reads its line (markup: the two after it);
the name must be secret-like by the same words as an assignment's, and the value random by the
same ``looks_random``.

:func:`in_context` is where the scanner sends a word no assignment follows: it chooses among
these looks, a command's flag (``commands.py``), libcurl's option, SQL's ``PASSWORD`` (``sql.py``)
and a query encoded in a URL, by the character after the name.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import GENERIC, MAX_NAME
from safeport.shared.secret_scan.checks import (
    is_placeholder,
    looks_random,
    mixed_generated,
)
from safeport.shared.secret_scan.commands import curl_option_at, flag_value_at
from safeport.shared.secret_scan.names import name_begins, name_words, reads_as_names, secret_name
from safeport.shared.secret_scan.passwords import chosen_password, password_name
from safeport.shared.secret_scan.spans import SecretSpan
from safeport.shared.secret_scan.sql import password_keyword_at
from safeport.shared.secret_scan.urls import encoded_query_at

_NAME_CHARS = re.compile(r"[\w.\-]{0,64}")
_LITERAL = r"""(?P<quote>\\?["'`])(?P<quoted>[^"'`\\\n]{1,256})(?P=quote)"""
_BARE = r"""(?P<value>[^\s"'`,;<>()\[\]{}\\]{1,256})"""
# Words that continue a secret's name in prose: "secret key", "access key", "api token".
_NAME_GOES_ON = re.compile(
    r"(?:[ \t]+(?i:key|token|secret|password|passphrase|code|pin|phrase)\b){1,2}"
)
_SEPARATOR = re.compile(r"[ \t]*(?:=|:)[ \t]*")
# "password for root: …", "token for the deploy bot = …": whose secret it is, then the value.
_WHOSE = re.compile(
    r"[ \t]+for[ \t]+(?:the[ \t]+)?[\w.@\-]{1,64}(?:[ \t]+[\w.@\-]{1,64})?[ \t]*[:=][ \t]*"
)
_IS = re.compile(r"[ \t]+(?:is|was)[ \t]+")
# A drawn value right after the name and a space, with nothing between ("token 9fQ…", a log's
# "refreshing token 9fQ…"): long, of a token's alphabet, ending where a word would.
_DRAWN_AFTER = re.compile(r"[ \t]+(?P<value>[A-Za-z0-9+/_\-]{20,256}={0,2})(?=[\s.,;:!?)\]}'\"]|$)")
# The same value in quotes or brackets ("token '9fQ…'", "token (9fQ…)"), closed as it opened.
_DRAWN_ENCLOSED = re.compile(
    r"[ \t]+(?P<open>[\"'`(\[<])(?P<value>[A-Za-z0-9+/_\-]{20,256}={0,2})(?P<close>[\"'`)\]>])"
)
_CLOSES = {'"': '"', "'": "'", "`": "`", "(": ")", "[": "]", "<": ">"}
# What _NAME_GOES_ON, _WHOSE and _IS all start with: blanks, then a letter (case-blind, as
# _NAME_GOES_ON's words are, so a Kelvin sign counts as the k it matches).
_WORD_AFTER_BLANKS = re.compile(r"[ \t]+(?i:[a-z])")
_HYPHENATED = re.compile(r"[A-Za-z0-9]+(?:[-_][a-z]{3,})+\.?")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\.?")
_DEFINE = re.compile(
    r"(?:#[ \t]*define|%define|%global|(?i:setx?)|ENV"
    r"|\((?:setq|setf|def|define|defvar|defconst|defparameter))[ \t]+\Z"
)
_LITERAL_ONLY = re.compile(rf"[ \t]+{_LITERAL}")
_CALL_LITERAL = re.compile(rf"\([ \t]*{_LITERAL}[ \t]*\)")
_MACRO_VALUE = re.compile(rf"[ \t]+(?:{_LITERAL}|{_BARE})")
_VALUE = re.compile(rf"(?:{_LITERAL}|{_BARE})")
_ELEMENT_REST = re.compile(r"(?:[ \t][^<>\n]{0,256})?>")
_CLOSING = re.compile(r"[ \t]*</")
# A lookup whose default, when it is a literal, is the secret itself.
_LOOKUP = re.compile(
    r"""[ \t]*(?::=|=|:|\?\?=|\|\|=)[ \t]*(?P<callee>[A-Za-z_$][\w.$]{0,64})
    (?:\([ \t]*(?P<key>\\?["'][^"'\n]{0,128}\\?["'])[ \t]*
        (?:,[ \t]*(?:(?i:default)[ \t]*[=:][ \t]*)?
           (?P<inner>\\?["'])(?P<default>[^"'\\\n]{1,256})(?P=inner)[ \t]*)?\)
      | \[[ \t]*\\?["'][^"'\n]{0,128}\\?["'][ \t]*\])?    # or a property: process.env.X
    (?:[ \t]*(?:or|\|\||\?\?|\?:)[ \t]*(?P<outer>\\?["'])(?P<fallback>[^"'\\\n]{1,256})(?P=outer))?
    """,
    re.VERBOSE,
)
_FOLLOWING = frozenset((" ", "\t", ">", "=", ":", "?", "|"))
_LOOKUP_CALLEES = re.compile(r"(?i:get|env|fetch|config|setting|option|param|lookup|pop|default)")


def prose_at(
    text: str, start: int, end: int, line_start: int, line_end: int, name_end: int | None = None
) -> SecretSpan | None:
    """The secret named in context around the keyword at ``text[start:end]``, if any; its name's
    characters end at ``name_end`` (found here when the caller does not know it)."""
    # What follows the name first: most words in code (``token)``, ``Token(``) are followed by
    # nothing these shapes take, and need no walk back to the name's start.
    if name_end is None:
        name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    following = text[name_end : name_end + 1]
    if following not in _FOLLOWING:
        return None
    lookup = _LOOKUP.match(text, name_end, line_end)
    if lookup is not None and not (lookup.group("default") or lookup.group("fallback")):
        lookup = None  # a lookup without a literal default holds no secret here
    spaced = following in (" ", "\t")
    if lookup is None and not spaced and following != ">":
        return None  # "token = tokenize(…)", "auth: Auth": an assignment already judged
    name_start = name_begins(text, start, line_start)
    if (spaced or following == ">") and text[name_start - 1 : name_start] == "<":
        return _element_value(text, name_start, name_end, line_end)
    found = None if lookup is None else _lookup_default(text, name_start, name_end, lookup)
    if found is None and spaced:
        found = _spaced_value(text, name_start, name_end, line_start, line_end)
    return found


def _spaced_value(
    text: str, name_start: int, name_end: int, line_start: int, line_end: int
) -> SecretSpan | None:
    name = text[name_start:name_end]
    # A macro's word ends in blanks just before the name (``_DEFINE``): a name opening its line
    # or after anything else is none, and skips the search.
    if (
        name_start > line_start
        and text[name_start - 1] in " \t"
        and _DEFINE.search(text, max(line_start, name_start - 16), name_start)
    ):
        if not _secret(name):
            return None
        return _value_span(_MACRO_VALUE.match(text, name_end, line_end))
    keyword = text[name_start - 2 : name_start]  # Clojure's and EDN's {:password "…"}
    if keyword[-1:] == ":" and (name_start - 1 == line_start or keyword[:1] in " \t{([,"):
        return _value_span(_LITERAL_ONLY.match(text, name_end, line_end)) if _secret(name) else None
    drawn = _DRAWN_AFTER.match(text, name_end, line_end) or _enclosed(text, name_end, line_end)
    if drawn is not None and _drawn(drawn.group("value")) and _secret(name):
        return SecretSpan(drawn.start("value"), drawn.end("value"), GENERIC)
    if not _WORD_AFTER_BLANKS.match(text, name_end, line_end):
        return None  # each shape left takes a word after blanks ("token lifetime", "for", "is")
    more = _NAME_GOES_ON.match(text, name_end, line_end)
    if more is not None:
        separator = _SEPARATOR.match(text, more.end(), line_end)
        if separator is None or not _secret(f"{name}{more.group()}"):
            return None
        return _value_span(_VALUE.match(text, separator.end(), line_end))
    whose = _WHOSE.match(text, name_end, line_end)
    if whose is not None:
        return _value_span(_VALUE.match(text, whose.end(), line_end)) if _secret(name) else None
    joint = _IS.match(text, name_end, line_end)
    if joint is None or not _secret(name):
        return None
    found = _VALUE.match(text, joint.end(), line_end)
    if found is not None and _HYPHENATED.fullmatch(found.group()):
        return None  # "the token is base64-encoded": a description, not the token
    return _value_span(found)


def _enclosed(text: str, name_end: int, line_end: int) -> re.Match[str] | None:
    found = _DRAWN_ENCLOSED.match(text, name_end, line_end)
    if found is None or _CLOSES[found.group("open")] != found.group("close"):
        return None
    return found


def _drawn(value: str) -> bool:
    """A value drawn at random, not a name: digits, capitals and small letters mixed, and its
    letters in short runs, not words (``AwsCredentialsProvider2`` is a name)."""
    return (
        mixed_generated(value)
        and looks_random(value, quoted=True)  # the word before says what it is
        and not reads_as_names(value)
        and not is_placeholder(value)
    )


def call_literal_at(
    text: str, start: int, end: int, line_start: int, line_end: int
) -> SecretSpan | None:
    """The one literal argument of a setter or builder named for a secret: ``setPassword("…")``,
    ``.withApiKey('…')``, ``token("…")``; a getter or a check (``get_password("…")``,
    ``check_password("…")``) names no secret of its own."""
    name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    found = _CALL_LITERAL.match(text, name_end, line_end)
    if found is None or "." in text[end:name_end]:
        return None  # token.startswith("…") calls a method of the token, not a setter
    name_start = start
    floor = max(line_start, start - MAX_NAME)
    while name_start > floor and (text[name_start - 1].isalnum() or text[name_start - 1] == "_"):
        name_start -= 1
    if not _secret(text[name_start:name_end]):
        return None
    return _value_span(found)


def _element_value(text: str, name_start: int, name_end: int, line_end: int) -> SecretSpan | None:
    """``<password …>value</password>``, or the value alone on the line after the tag."""
    name = text[name_start:name_end]
    rest = _ELEMENT_REST.match(text, name_end, line_end)
    if rest is None or text[rest.end() - 2 : rest.end()] == "/>" or not _secret(name):
        return None
    value_start = rest.end()
    if not text[value_start:line_end].strip():
        # The value alone on the next line, the closing tag on the one after.
        value_start = line_end + 1
        newline = text.find("\n", value_start)
        if newline < 0 or not _CLOSING.match(text, newline + 1):
            return None
        value_end = newline
    else:
        value_end = text.find("<", value_start, line_end)
        if value_end < 0:
            return None
    value = text[value_start:value_end]
    stripped = value.strip()
    if not stripped:
        return None
    value_start += len(value) - len(value.lstrip())
    return _checked(text, value_start, value_start + len(stripped), quoted=True, name=name)


def _lookup_default(
    text: str, name_start: int, name_end: int, found: re.Match[str]
) -> SecretSpan | None:
    """The literal default of the lookup ``found`` assigned to a secret-like name."""
    if not _LOOKUP_CALLEES.search(found.group("callee")):
        return None
    if not _secret(text[name_start:name_end].strip("\"'")):
        return None
    group = "default" if found.group("default") else "fallback"
    if found.group(group) is None:
        return None
    return _checked(text, found.start(group), found.end(group), quoted=True)


def _password(name: str) -> bool:
    words = name_words(name.replace(" ", "_").replace("\t", "_"))
    return bool(words) and password_name(words)


def _secret(name: str) -> bool:
    words = name_words(name.replace(" ", "_").replace("\t", "_"))
    return bool(words) and secret_name(name, words)


def _value_span(found: re.Match[str] | None) -> SecretSpan | None:
    if found is None:
        return None
    if found.group("quoted"):
        return _checked(found.string, found.start("quoted"), found.end("quoted"), quoted=True)
    value_end = found.end("value")
    if found.string.startswith("(", value_end) or _DOTTED.fullmatch(found.group("value")):
        return None  # a call or an attribute: code, not a literal
    if found.string[value_end - 1] == ".":
        value_end -= 1  # the full stop ending a sentence
    return _checked(found.string, found.start("value"), value_end, quoted=False)


def _checked(text: str, start: int, end: int, *, quoted: bool, name: str = "") -> SecretSpan | None:
    """A literal that looks generated, or, delimited under a password's name (``name``), one a
    person chose (``passwords.chosen_password``)."""
    value = text[start:end]
    if not looks_random(value, quoted=quoted) and not (
        quoted and name and _password(name) and chosen_password(value, name)
    ):
        return None
    return SecretSpan(start, end, GENERIC)


# What may follow a word for one of the shapes below to hold its value.
_CONTEXT_FOLLOWING = frozenset((" ", "\t", ">", "=", ":", "?", "|"))
# Everything after a name (its run of name characters, at most 64) that ``in_context`` reads on:
# after anything else ("" at the line's end) it finds nothing, and the scanner does not call it.
CONTEXT_STARTS = frozenset(("(", ",", "%", *_CONTEXT_FOLLOWING))


def in_context(
    text: str,
    start: int,
    end: int,
    line_start: int,
    line_end: int,
    name_end: int | None = None,
    *,
    spaced_may: bool = False,
) -> SecretSpan | None:
    """A secret named by the word at ``text[start:end]`` in a shape other than an assignment's:
    a command's flag, libcurl's option, SQL's PASSWORD, prose, markup, a lookup's default. Its
    name's characters end at ``name_end`` (found here when the caller does not know it);
    ``spaced_may`` says the caller found ``spaced_may_hold`` true for it already."""
    # Each takes its value after a space, a separator, a tag's end or a comma; most words in
    # code (``token)``, ``self.auth.login(``) are followed by none, and are done here.
    if name_end is None:
        name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    following = text[name_end : name_end + 1]
    if following == "(":  # PASSWORD('…'), setPassword("…")
        return password_keyword_at(text, start, end, line_start, line_end) or call_literal_at(
            text, start, end, line_start, line_end
        )
    if following == ",":  # CURLOPT_PASSWORD, "…"
        if "CURLOPT_" not in text[max(line_start, start - 64) : start]:
            return None
        return curl_option_at(text, start, end, line_end)
    if following == "%":  # a query encoded in a URL: %26token%3D…
        return encoded_query_at(text, start, end, line_start, line_end)
    if following not in _CONTEXT_FOLLOWING:
        return None
    if (
        following in (" ", "\t")
        and not spaced_may
        and not spaced_may_hold(text, start, name_end, line_start, line_end)
    ):
        return None
    if following in (" ", "\t"):
        before = text[start - 1 : start] if start > line_start else ""
        if before == "-" or (
            before.isalnum() and text.rfind("-", max(line_start, start - 64), start) >= 0
        ):
            found = flag_value_at(text, start, end, line_start, line_end)
            if found is not None:
                return found
        found = password_keyword_at(text, start, end, line_start, line_end)
        if found is not None:
            return found
    return prose_at(text, start, end, line_start, line_end, name_end)


# A name followed by a space and a word ("the token expires", "token lifetime": most word hits
# in prose and code) holds a value in a few shapes only, each known by what comes after the name
# (a word that continues it, "for …", "is"/"was") or before it (a flag's dash, a tag's bracket, a
# keyword's colon, a macro, SQL's PASSWORD). Two cheap looks stand in for every shape's own.
_SPACED_AFTER = re.compile(
    r"[ \t]+(?:[^A-Za-z \t]|(?i:key|token|secret|password|passphrase|code|pin|phrase)\b"
    r"|for[ \t]|is[ \t]|was[ \t]|[A-Za-z0-9+/_\-]{20})"
)


def spaced_may_hold(text: str, start: int, name_end: int, line_start: int, line_end: int) -> bool:
    """Whether a name a space follows may hold a value in one of the shapes above."""
    if _SPACED_AFTER.match(text, name_end, line_end) or text[start : start + 4].lower() == "pass":
        return True
    before = text[max(line_start, start - 80) : start]
    return (
        "-" in before
        or "<" in before
        or ":" in before
        or "(" in before
        or "define" in before
        or "%global" in before
        or "ENV" in before
        or " set" in f" {before.lower()}"  # the macro word, not "offset" or "dataset"
    )
