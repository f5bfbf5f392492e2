"""Secrets whose name is not followed by its value: the name is itself a value, held in a
field beside the secret's.

- XML and .NET configuration: ``<add key="Password" value="…"/>``, ``<add name="ApiKey" …>``;
- JSON name/value objects: ``{"name": "db_password", "value": "…"}`` (ECS task definitions,
  Terraform and CI variables), on one line or two;
- Kubernetes environment entries: ``- name: API_TOKEN`` with ``value: "…"`` on the next line;
- tuples and call arguments: ``("password", "…")``, ``set("api_key", "…")``;
- property lists: ``<key>APISecret</key>`` then ``<string>…</string>``;
- Terraform's variable blocks: ``variable "db_password" {`` with ``default = "…"`` inside the
  block, on its line or below.

Command lines are ``commands.py``'s.

Like ``assignments.py`` each look starts at a keyword the prefilter found and reaches at most
one line further (a variable block, 1,024 characters), so its cost is per keyword. The name
must be secret-like by the same words and the value random by the same ``looks_random``; a
call argument's value must be quoted, since an unquoted one is a variable.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import GENERIC, MAX_NAME, MAX_VALUE, long_value_end
from safeport.shared.secret_scan.checks import looks_random
from safeport.shared.secret_scan.names import name_begins, name_words, secret_name
from safeport.shared.secret_scan.passwords import chosen_password
from safeport.shared.secret_scan.spans import SecretSpan

_QUOTE = r"""\\?["']"""
# A cheap first look from the keyword's end: the name closes with a quote followed by a comma
# or a ``value`` attribute, or it ends its line (a YAML ``name:`` entry).
# The name's characters are taken possessively: none is a quote or a space, so giving any back
# could not match, and a miss (most calls) costs one pass over the name.
_MAY_PAIR = re.compile(
    rf"[\w.\-]{{0,{MAX_NAME}}}+(?:{_QUOTE}[ \t]*(?:,|(?i:value)|\{{|\r?$)|[ \t]*\r?$)", re.MULTILINE
)
# What stands right after the name's characters wherever _MAY_PAIR matches ("" at the line's end):
# the scanner tries the pattern only after one of these.
PAIR_STARTS = frozenset(("\\", '"', "'", " ", "\t", "\r", ""))
PAIR_AFTER_BLANKS = frozenset(("\r", ""))  # after blanks there, only the line's end
_NAME_CHARS = re.compile(rf"[\w.\-]{{0,{MAX_NAME}}}")
# What stands before the name's opening quote (searched in a short window that ends there).
_BEFORE = re.compile(
    rf"""(?:
        (?P<xml>(?<![\w-])(?i:key|name)[ \t]*=[ \t]*)
      | (?P<json>{_QUOTE}(?i:name|key){_QUOTE}[ \t]*:[ \t]*)
      | (?P<yaml>^[ \t]*(?:-[ \t]+)?name[ \t]*:[ \t]*)
      | (?P<call>[(\[][ \t]*)
      | (?P<hcl>(?<![\w-])variable[ \t]+)
    )(?P<quote>{_QUOTE}|)\Z""",
    re.VERBOSE | re.MULTILINE,
)
_BEFORE_WINDOW = 24
# A Terraform variable block: its opening brace after the name's closing quote, and its
# default. The block is read at most this far, its depth counted outside strings and comments,
# so a nested block (``validation { … }``) is stepped over and the block's end ends the look.
_HCL_OPEN = re.compile(rf"{_QUOTE}[ \t]*\{{")
_HCL_DEFAULT = re.compile(r"""[ \t]*default[ \t]*=[ \t]*(?P<quote>["'])""")
_HCL_REACH = 1024
_HCL_NOT_CODE = re.compile(r'"(?:[^"\\\n]|\\.)*"|(?:#|//).*')
# What follows the name's closing quote, for each shape, up to the value's opening quote.
_AFTER = {
    "xml": re.compile(rf"{_QUOTE}[ \t]+(?i:value)[ \t]*=[ \t]*(?P<quote>{_QUOTE})"),
    "json": re.compile(
        rf"{_QUOTE}[ \t]*,[ \t]*(?:\r?\n[ \t]*)?{_QUOTE}(?i:value){_QUOTE}[ \t]*:[ \t]*"
        rf"(?P<quote>{_QUOTE}|)"
    ),
    "yaml": re.compile(rf"(?:{_QUOTE})?[ \t]*\r?\n[ \t]*value[ \t]*:[ \t]*(?P<quote>[\"']|)"),
    "call": re.compile(rf"{_QUOTE}[ \t]*,[ \t]*(?P<quote>{_QUOTE})"),
}
_UNQUOTED = re.compile(rf"[^\s\"'`,;<>()\[\]{{}}\\#]{{1,{MAX_VALUE}}}")


def may_pair(text: str, end: int, line_end: int) -> bool:
    """Whether the keyword ending at ``end`` could close a name held in a field of its own."""
    return _MAY_PAIR.match(text, end, line_end) is not None


def pair_at(
    text: str, start: int, end: int, line_start: int, line_end: int
) -> tuple[SecretSpan | None, int]:
    """The value paired with the name around the keyword at ``text[start:end]``, if that name is
    secret-like and the value looks generated; and how far the judgement reached."""
    # Most keywords reaching here are words of prose or code ending their line (``pass``): with
    # no quote and no ``name`` before them, no walk back to the name's start is needed.
    lead = text[max(line_start, start - MAX_NAME - _BEFORE_WINDOW) : start]
    if '"' not in lead and "'" not in lead and "name" not in lead:
        return None, end
    name_start = name_begins(text, start, line_start)
    # Only a quoted name, or one after YAML's ``name:``, is worth the search of what precedes.
    if (
        text[name_start - 1 : name_start] not in ("'", '"')
        and "name" not in text[max(line_start, name_start - _BEFORE_WINDOW) : name_start]
    ):
        return None, end
    name_end = _NAME_CHARS.match(text, end, line_end).end()  # type: ignore[union-attr]
    name = text[name_start:name_end]
    # A name that is one small word ("seed", "key") is judged before the search of what
    # precedes it, which costs more: both refusals end the look alike.
    words = name_words(name) if name.isalnum() and name.islower() else []
    if words and not secret_name(name, words):
        return None, end
    before = _BEFORE.search(text, max(line_start, name_start - _BEFORE_WINDOW), name_start)
    if before is None:
        return None, end
    shape = next(group for group in ("xml", "json", "yaml", "call", "hcl") if before.group(group))
    if shape != "yaml" and not before.group("quote"):
        return None, end  # an unquoted name in code is a variable, not a field's value
    if not words:
        words = name_words(name)
        if not words or not secret_name(name, words):
            return None, end
    after, limit = _value_opening(text, shape, name_end, line_end)
    if after is None:
        return None, end
    quote = after.group("quote")
    value_start = after.end()
    if quote:
        value_end = text.find(quote, value_start, min(limit, value_start + MAX_VALUE + 2))
        if value_end < 0:
            value_end = long_value_end(text, value_start, limit)
        if value_end < 0:
            return None, end
    else:
        run = _UNQUOTED.match(text, value_start, limit)
        if run is None:
            return None, end
        value_end = run.end()
    value = text[value_start:value_end]
    if value.endswith("\\") and quote:
        value, value_end = value[:-1], value_end - 1
    if not looks_random(value, quoted=bool(quote)) or value.lower() in name.lower():
        return None, value_end
    return SecretSpan(value_start, value_end, GENERIC), value_end


# Calls whose signature says which argument is the password, by the literal that opens the
# argument list: for each number of arguments the call takes, the password's position.
# ``requests.get(url, auth=("u", "pw"))``, ``smtplib``/``ftplib``/``imaplib`` ``.login(u, pw)``,
# JDBC's ``DriverManager.getConnection(url, u, pw)``, PHP's ``new PDO($dsn, $u, 'pw')`` and
# ``mysqli``, .NET's ``NetworkCredential``, RabbitMQ's ``pika.PlainCredentials``, Go's
# ``req.SetBasicAuth`` and ``smtp.PlainAuth``, Sequelize's ``new Sequelize(db, u, pw)``.
POSITIONAL_CALLS: dict[str, dict[int, int]] = {
    "auth=(": {2: 1},
    "auth = (": {2: 1},
    "HTTPBasicAuth(": {2: 1},
    "HTTPDigestAuth(": {2: 1},
    "HTTPProxyAuth(": {2: 1},
    "BasicAuth(": {2: 1, 3: 1},
    "login(": {2: 1},
    "Login(": {2: 1},
    "getConnection(": {2: 1, 3: 2},
    "PDO(": {3: 2, 4: 2},
    "mysqli(": {3: 2, 4: 2, 5: 2, 6: 2},
    "mysqli_connect(": {3: 2, 4: 2, 5: 2, 6: 2},
    "mysql_connect(": {3: 2, 4: 2},
    "mysqli_real_connect(": {4: 3, 5: 3, 6: 3, 7: 3},
    "ftp_login(": {3: 2},
    "ldap_bind(": {3: 2},
    "ssh2_auth_password(": {3: 2},
    "imap_open(": {3: 2, 4: 2},
    "NetworkCredential(": {2: 1, 3: 1},
    "PlainCredentials(": {2: 1},
    "UsernamePasswordCredentials(": {2: 1},
    "PasswordAuthentication(": {2: 1},
    "SetBasicAuth(": {2: 1},
    "PlainAuth(": {4: 2},
    "UserPassword(": {2: 1},
    "basic_auth(": {2: 1},
    "simple_bind_s(": {2: 1},
    "simple_bind(": {2: 1},
    "Sequelize(": {3: 2, 4: 2},
}
_ARGUMENTS_REACH = 400
# One argument that is a literal alone: a string (C#'s verbatim ``@"…"`` too), possibly turned
# into characters for Java's ``PasswordAuthentication`` (``"…".toCharArray()``).
_LITERAL_ARGUMENT = re.compile(
    r"""[ \t]*@?(?P<quote>["'])(?P<value>(?:(?!(?P=quote))[^\\\n]){1,256})(?P=quote)"""
    r"""(?:\.toCharArray\(\))?[ \t]*\Z"""
)


def positional_at(text: str, end: int, line_end: int) -> SecretSpan | None:
    """The literal password argument of the call whose argument list opens at ``end``."""
    opened = text[max(0, end - 32) : end]
    signature = next(
        (positions for literal, positions in POSITIONAL_CALLS.items() if opened.endswith(literal)),
        None,
    )
    if signature is None:
        return None
    arguments = _arguments(text, end, min(line_end, end + _ARGUMENTS_REACH))
    if arguments is None or len(arguments) not in signature:
        return None
    start, stop = arguments[signature[len(arguments)]]
    found = _LITERAL_ARGUMENT.match(text[start:stop])
    if found is None:
        return None  # a variable, a call, a lookup: the password is somewhere else
    value = found.group("value")
    if not chosen_password(value, "password") and not looks_random(value, quoted=True):
        return None
    return SecretSpan(start + found.start("value"), start + found.end("value"), GENERIC)


def _value_opening(
    text: str, shape: str, name_end: int, line_end: int
) -> tuple[re.Match[str] | None, int]:
    """What opens the value after the name in ``shape``, and the end of the line it may close
    on: the next line's at most (YAML, pretty-printed JSON), a variable block's default's own."""
    if shape == "hcl":
        after = _hcl_default(text, name_end, line_end)
        newline = -1 if after is None else text.find("\n", after.end())
        return after, len(text) if newline < 0 else newline
    newline = text.find("\n", line_end + 1)
    limit = len(text) if newline < 0 else newline
    return _AFTER[shape].match(text, name_end, limit), limit


def _hcl_default(text: str, name_end: int, line_end: int) -> re.Match[str] | None:
    """The ``default = "`` of the variable block whose name's closing quote is at
    ``name_end``, in the block itself (not a nested one), within ``_HCL_REACH`` characters."""
    opened = _HCL_OPEN.match(text, name_end, line_end)
    if opened is None:
        return None
    limit = min(len(text), opened.end() + _HCL_REACH)
    if text.find("default", opened.end(), limit) < 0:
        return None  # most variable blocks have none: no walk over their lines
    depth, position = 1, opened.end()
    while position < limit:
        newline = text.find("\n", position, limit)
        end = limit if newline < 0 else newline
        if depth == 1 and (found := _HCL_DEFAULT.match(text, position, end)) is not None:
            return found
        code = _HCL_NOT_CODE.sub("", text[position:end])
        depth += code.count("{") - code.count("}")
        if depth <= 0:
            return None  # the block ended without a default of its own
        position = end + 1
    return None


def _arguments(text: str, start: int, limit: int) -> list[tuple[int, int]] | None:
    """The top-level arguments of a call from just after its ``(`` to its closing bracket, as
    (start, end) offsets; None if the list does not close within ``limit``."""
    arguments: list[tuple[int, int]] = []
    depth = 0
    quote = ""
    begin = index = start
    while index < limit:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                if text[begin:index].strip():
                    arguments.append((begin, index))
                return arguments
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append((begin, index))
            begin = index + 1
        index += 1
    return None


# A property list's ``<key>APISecret</key>`` and, on the same line or the next ones, the
# ``<string>…</string>`` that is its value.
_PLIST_VALUE = re.compile(r"[ \t\r\n]{0,64}<string>(?P<value>[^<\n]{1,512})</string>")


def plist_value_at(text: str, start: int, end: int) -> SecretSpan | None:
    """The string after a plist key whose name is secret-like, the key's ``</key>`` at
    ``text[start:end]``."""
    opened = text.rfind("<key>", max(0, start - 128), start)
    if opened < 0:
        return None
    name = text[opened + len("<key>") : start]
    if not name or "<" in name or not secret_name(name, name_words(name)):
        return None
    found = _PLIST_VALUE.match(text, end, min(len(text), end + 600))
    if found is None or not looks_random(found.group("value"), quoted=True):
        return None
    return SecretSpan(found.start("value"), found.end("value"), GENERIC)
