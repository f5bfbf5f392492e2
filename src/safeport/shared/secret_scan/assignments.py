"""Secrets by their surroundings rather than their shape: a random literal assigned to a
secret-like name, a password inside a URL, an ``Authorization`` header.

Each function starts at a keyword the prefilter found and looks only along that line, a bounded
number of characters either way, so its cost is per keyword, never per byte of the file. One
separator grammar covers code (``token = "…"``, ``api_key: str = '…'``, ``{"password": "…"}``,
``password="…"`` as an argument), YAML, JSON, TOML, INI, properties, ``.env`` lines, XML elements
and notebook JSON (whose quotes arrive escaped as ``\\"``).
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.checks import (
    generated_letters,
    is_basic_credential,
    is_placeholder,
    looks_random,
    mixed_generated,
    shannon_bits,
)
from safeport.shared.secret_scan.encoded import basic_credential_at
from safeport.shared.secret_scan.names import (
    name_begins,
    name_words,
    reads_as_names,
    secret_name,
    weak_secret_name,
)
from safeport.shared.secret_scan.passwords import chosen_password, password_name
from safeport.shared.secret_scan.spans import SecretSpan

GENERIC = "secret-assignment"
MAX_NAME = 64
MAX_VALUE = 256
# A quoted value that runs past MAX_VALUE in these characters alone is one long generated value
# (a base64 blob): judged by its first MAX_VALUE characters, and withheld to its end by the
# scanner (``spans.reach_value_ends``), rather than served whole for lack of a closing quote.
_LONG_RUN = re.compile(rf"[A-Za-z0-9+/=_\-]{{{MAX_VALUE}}}")


def long_value_end(text: str, value_start: int, limit: int) -> int:
    """Where a quoted value too long to find its quote is judged up to, or -1 if it is not a
    run of value characters (prose, code, a string that never closes)."""
    return value_start + MAX_VALUE if _LONG_RUN.match(text, value_start, limit) else -1


_NAME_CHARS = re.compile(r"[\w.\-]{0,64}")
_AFTER_NAME = re.compile(
    r"""(?:\\?["'])?\]?(?:\*\*?(?=:))?          # the name's closing quote or bracket, or bold
    (?P<space>[ \t]{0,8})
    (?::[ \t]{0,4}(?:&(?:'\w+[ \t])?)?                   # a type annotation; one with a
      (?:[A-Za-z_][\w\[\]., |]{0,60}?[ \t]{1,4}(?==)|[A-Za-z_][\w\[\].,|]{0,60}(?==(?![\s=]|$))))?
    # A type with a space before its "=" may hold spaces, so base64's padding in "Basic
    # dXNlcjpw==" is no type's; one glued to its "=" has a default after it ("x: int=5"), so a
    # value's padding ending it ("token: c2VjcmV0=") is none either.
    (?P<sep>::=|:=|[?+]=|\|\|=|[=!]==?|=>|=|:|\uff1a|>|<-|)    # also Make's, a comparison, R's
    (?:(?<=:)(?:\*\*?|__)(?=[ \t]))?               # Markdown's bold around a label: **Password:**
    [ \t]{0,8}
    (?P<prefix>[rRbBuUf]{1,2}(?=["'])|@(?="))?  # a string prefix: b"…", r'…', f"…", @"…"
    (?P<quote>\\?["'`]|&quot;|)                # quotes escaped in HTML too: &quot;…&quot;
    """,
    re.VERBOSE,
)
# What _NAME_CHARS and _AFTER_NAME accept when a separator follows (a superset: this one may
# backtrack into the name): every separator, and a type annotation, starts with one of ":=>".
_SEPARATED = re.compile(
    r"""[\w.\-]{0,64}(?:\\?["'])?\]?(?:\*\*?)?[ \t]{0,8}(?:[:=>\uff1a]|[?+!|]=|<-)"""
)
# What stands right after a keyword's name (its run of name characters, at most 64; "" at the
# line's end) wherever _SEPARATED matches: the scanner tries the pattern only after one of these.
# None is a name character, so no shorter run of the name could match either. Where the name
# is followed by blanks, what comes after them (the separator) is one of SEPARATED_AFTER_BLANKS.
SEPARATED_STARTS = frozenset(
    ("\\", '"', "'", "]", "*", " ", "\t", ":", "=", ">", "\uff1a", "?", "+", "!", "|", "<")
)
SEPARATED_AFTER_BLANKS = frozenset((":", "=", ">", "\uff1a", "?", "+", "!", "|", "<"))
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
# A token type's short prefix and a dot before a generated body (Vault's ``s.…`` and ``b.…``):
# shaped like an attribute, but no attribute's name is drawn at random (nor is one of a
# one- or two-letter object; ``self``, ``args`` and ``cfg`` are longer).
_PREFIXED_TOKEN = re.compile(r"[a-z]{1,2}\.(?P<body>[A-Za-z0-9]{16,256})")
_ANNOTATION_END = re.compile(r"[ \t]*(?:[,)\]|]|$)")
_UNQUOTED = re.compile(r"[^\s\"'`,;<>()\[\]{}\\]{1,256}")
_AUTH_SCHEME = re.compile(
    r"(?i:bearer|basic|token|bot|digest|apikey|sso-key|negotiate|ntlm)[ \t]+"
    r"(?P<value>[A-Za-z0-9._~+/:\-]{8,2000}=*)"
)
_BEARER = re.compile(r"(?i:bearer)[ \t]+(?P<value>[A-Za-z0-9._~+/\-]{16,2000}=*)")
# A shell parameter expansion with a default (``${VAR:-…}``, ``${VAR:=…}``, or without colon).
_SHELL_DEFAULT = re.compile(r"\$\{\w{1,64}:?[-=](?P<default>[^\s{}$`\"']{1,256})\}")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+")
_COMPARISONS = frozenset({"==", "!=", "===", "!=="})
_HAS_DIGIT = re.compile(r"\d")
_TOKEN_ALPHABET = re.compile(r"[A-Za-z0-9+/=_\-.~]+")
_STRONG_AFTER = re.compile(
    r"""[\w.\-]{0,64}(?:\\?["'])?\]?[ \t]{0,8}(?:=>|:=|=|:)[ \t]{0,8}"""
    r"""(?:[bu]?\\?["'`]|&quot;)?[A-Za-z0-9+/=_\-.~]{16}"""
)
# The same for _STRONG_AFTER (``may_assign_strong``).
STRONG_STARTS = frozenset(("\\", '"', "'", "]", " ", "\t", "=", ":"))
STRONG_AFTER_BLANKS = frozenset(("=", ":"))


def may_assign(text: str, start: int, end: int, line_end: int) -> bool:
    """A cheap first look: whether the keyword at ``text[start:end]`` could start a value on its
    line (a separator follows its name, or it is ``pass``, which netrc follows with a space).
    Most words in code (``token = tokenize(…)`` aside) are not, and skip the full judgement."""
    return text[start:end].lower() == "pass" or _SEPARATED.match(text, end, line_end) is not None


def may_assign_strong(text: str, end: int, line_end: int) -> bool:
    """``may_assign`` for a weak name's keyword: a separator, then at least 16 characters of a
    token's alphabet (``key=lambda …``, ``"key": value`` and ``api: str`` stop here)."""
    return _STRONG_AFTER.match(text, end, line_end) is not None


def assignment_at(
    text: str, start: int, end: int, line_start: int, line_end: int, name_end: int | None = None
) -> tuple[SecretSpan | None, int]:
    """The value assigned to the name around the keyword at ``text[start:end]``, if that name is
    secret-like and the value looks generated; and how far the judgement reached (a keyword
    inside a value already judged needs no judgement of its own). ``name_end`` is where the
    name's characters after the keyword end (at most 64), where the caller knows it already."""
    if name_end is None:
        name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    span, reach = _assignment(text, start, end, name_end, line_start, line_end)
    return span, max(reach, end)


def _assignment(
    text: str, start: int, end: int, name_end: int, line_start: int, line_end: int
) -> tuple[SecretSpan | None, int]:
    # What follows the name first: most words in code (``passed``, ``Token(``) have no
    # separator after them, and those need no walk back to the name's start. The steps after
    # this one run only for the few keywords a separator follows.
    after = _AFTER_NAME.match(text, name_end, line_end)
    if after is None:
        return None, 0
    sep = after.group("sep")
    if not (sep or after.group("space")):
        return None, 0
    if not sep and text[start:end].lower() != "pass":
        return None, 0  # a bare space takes a value only after "password" (below): prose
    name_start = name_begins(text, start, line_start)
    name = text[name_start:name_end].strip(".-")
    if not sep and (
        not _starts_line(text, line_start, name_start)
        if after.group("quote")
        else len(name) < len("passwd")
    ):
        # What a bare space may separate (``_bare_space_separates``), known before the name's
        # words: a quoted value of a name opening its line, or the value of a name spelled
        # "password" or "passwd" ("pass  # a comment", "Pass `--full-trace`" are neither).
        return None, 0
    prefix = (after.group("prefix") or "").lower()
    if "r" in prefix or "f" in prefix:
        return None, 0  # raw strings are patterns, f-strings are built from other values
    # What follows first, then the name: most names in code are given code ("key =
    # self.frame.path", "seed = int(seed)"), which only an Authorization header's may hold.
    bounds = _value_bounds(text, after, name_start, line_end)
    if bounds is None and "authorization" not in name.lower():
        return None, 0
    words = name_words(name)
    if not words:
        return None, 0
    if not sep and not _bare_space_separates(text, line_start, name_start, words, after):
        return None, 0
    weak = not secret_name(name, words)
    if weak and not weak_secret_name(words):
        return None, 0
    if words[-1] == "authorization":
        header = _authorization_header(text, after.end(), line_end)
        if header is not None:
            return header
    if bounds is None:
        return None, 0
    return _judged_value(text, after, name, words, weak, *bounds)


def _bare_space_separates(
    text: str, line_start: int, name_start: int, words: list[str], after: re.Match[str]
) -> bool:
    """A bare space separates a value only in netrc-style "password s3cr3t", and in Groovy's
    and Gradle's properties set without "=" (``storePassword 'x'``, ``keyPassword "x"``)."""
    return (words in (["password"], ["passwd"]) and not after.group("quote")) or bool(
        after.group("quote") and password_name(words) and _starts_line(text, line_start, name_start)
    )


def _authorization_header(
    text: str, value_start: int, line_end: int
) -> tuple[SecretSpan | None, int] | None:
    """The credential of an ``Authorization`` value that names its scheme, and how far it was
    judged; None when the value names no scheme, for the ordinary judgement of a value."""
    scheme = _AUTH_SCHEME.match(text, value_start, line_end)
    if scheme is None or not _token_like(scheme.group("value")):
        return None
    if text[scheme.start() : scheme.start() + 5].lower() == "basic":
        # Basic is base64 of user:password: judged by what it decodes to, so a
        # documented stand-in (user:password) is served like any placeholder.
        basic = basic_credential_at(text, scheme.start("value"))
        return (basic, basic.end) if basic is not None else (None, 0)
    span = SecretSpan(scheme.start("value"), scheme.end("value"), "authorization-header")
    return span, span.end


def _value_bounds(
    text: str, after: re.Match[str], name_start: int, line_end: int
) -> tuple[int, int] | None:
    """Where the value after the separator starts and ends: to its closing quote, to the end
    of a shell expansion, or over an unquoted run; None when what follows is code (a call, an
    attribute, a parameter's type), not a literal."""
    quote = after.group("quote")
    value_start = after.end()
    if quote:
        value_end = text.find(quote, value_start, min(line_end, value_start + MAX_VALUE + 2))
        if value_end < 0:
            value_end = long_value_end(text, value_start, line_end)
        if value_end < 0:
            return None
    elif (
        text.startswith("${", value_start, line_end)  # what every expansion opens with
        and (expansion := _SHELL_DEFAULT.match(text, value_start, line_end)) is not None
    ):
        value_end = expansion.end()  # judged by its default below
    else:
        run = _UNQUOTED.match(text, value_start, line_end)
        if run is None or text.startswith("(", run.end()) or _attribute(run.group()):
            return None  # a call or an attribute: code, not a literal
        closing = _ANNOTATION_END.match(text, run.end(), line_end)
        # A type follows ": " in code; prose and configs write "(pw:Xy7…)" without the space.
        spaced = text[after.end("sep") : after.end("sep") + 1] in (" ", "\t")
        annotation = after.group("sep") == ":" and spaced and closing and closing.group().strip()
        if annotation and run.group()[:1].isupper():
            return None  # "private_key: Ed25519PrivateKey," is a parameter's type
        value_end = run.end()
        if text[name_start - 1 : name_start] in ("?", "&"):  # a URL's query: ?key=…&next=…
            ampersand = text.find("&", value_start, value_end)
            value_end = value_end if ampersand < 0 else ampersand
    return value_start, value_end


def _attribute(value: str) -> bool:
    """Whether an unquoted value reads as an attribute (``self.frame.path``) rather than a
    token with a dotted prefix."""
    if not _DOTTED.fullmatch(value):
        return False
    prefixed = _PREFIXED_TOKEN.fullmatch(value)
    if prefixed is None:
        return True
    body = prefixed.group("body")
    return not mixed_generated(body) or reads_as_names(body)


def _judged_value(
    text: str,
    after: re.Match[str],
    name: str,
    words: list[str],
    weak: bool,
    value_start: int,
    value_end: int,
) -> tuple[SecretSpan | None, int]:
    """The value at ``text[value_start:value_end]`` as a secret if it looks generated (or
    chosen, under a name that can only mean a password), and how far the judgement reached."""
    quote = after.group("quote")
    value = text[value_start:value_end]
    if value.endswith("\\") and quote:
        value, value_end = value[:-1], value_end - 1
    default = _SHELL_DEFAULT.fullmatch(value) if value.startswith("${") else None
    if default is not None and default.group("default"):
        # ``"${DB_PASSWORD:-…}"``: the lookup's literal default is what the program runs with.
        base = value_start
        value_start, value_end = base + default.start("default"), base + default.end("default")
        value = default.group("default")
    chosen = bool(quote) and not weak and password_name(words) and chosen_password(value, name)
    # Unquoted, letters alone are a variable in code, but under a name that can only mean a
    # password (``.env``'s ``DB_PASSWORD=…``, YAML's ``password: …``) a draw with digits turned
    # off is still the password.
    chosen = chosen or (
        not quote and not weak and _strongest_name(words) and generated_letters(value)
    )
    if not chosen and (
        not looks_random(value, quoted=bool(quote)) or value.lower() in name.lower()
    ):
        return None, value_end
    if weak and not strongly_random(value):
        return None, value_end
    if after.group("sep") in _COMPARISONS and not (_HAS_DIGIT.search(value) and value.isascii()):
        return None, value_end  # token == "#bygroup": a lexer's state, not a password checked
    return SecretSpan(value_start, value_end, _assignment_kind(name, words, value)), value_end


def bearer_at(text: str, start: int, line_end: int) -> SecretSpan | None:
    """A token after a bare ``Bearer`` (headers written in code, curl lines, docs)."""
    found = _BEARER.match(text, start, line_end)
    if found is None or not _token_like(found.group("value")):
        return None
    return SecretSpan(found.start("value"), found.end("value"), "authorization-header")


_SECRET_PAIRS = frozenset({"client", "api", "app", "consumer", "shared", "webhook", "signing"})


def _strongest_name(words: list[str]) -> bool:
    """A name that means a password or a generated secret and nothing else: ``password``,
    ``passphrase``, ``secret_key``, ``client_secret``, ``api_secret``."""
    if password_name(words):
        return True
    last = words[-1]
    if words[-2:] == ["secret", "key"] or last == "secretkey":
        return True
    return last == "secret" and len(words) >= 2 and words[-2] in _SECRET_PAIRS


def _starts_line(text: str, line_start: int, name_start: int) -> bool:
    return not text[line_start:name_start].strip()


def strongly_random(value: str) -> bool:
    """Generated, not chosen: long, of near-uniform characters, and no hex digest or UUID (a
    checksum or an id under a dictionary's key)."""
    if len(value) < 16 or _HEXISH.fullmatch(value) or not _TOKEN_ALPHABET.fullmatch(value):
        return False
    return shannon_bits(value) >= (3.5 if len(value) < 24 else 3.8)


def _assignment_kind(name: str, words: list[str], value: str) -> str:
    if name.startswith("_auth") or name == "_password":
        return "npm-auth-token"  # .npmrc: //registry/:_authToken=…, _auth=, _password=
    if words == ["auth"] and is_basic_credential(value):
        return "docker-auth"  # ~/.docker/config.json: "auths": {host: {"auth": base64(user:pass)}}
    return GENERIC


def _token_like(value: str) -> bool:
    return not is_placeholder(value) and looks_random(value, quoted=True)
