"""curl's user argument as the shell reads it: ``-u user:password`` in any quoting, over a
command's lines joined by a backslash-newline, the password judged as a password, and an API key
passed as the user with the password left empty (``-u key:``)."""

from __future__ import annotations

import re

from safeport.shared.secret_scan.assignments import GENERIC
from safeport.shared.secret_scan.checks import generated_letters, looks_random
from safeport.shared.secret_scan.passwords import chosen_password
from safeport.shared.secret_scan.spans import SecretSpan

# curl's user flags: ``-u`` alone or ending a cluster of short flags (``-sSu``), ``--user``, and
# the proxy's ``-U`` and ``--proxy-user``; their argument is read as the shell reads one word.
_CURL_USER = re.compile(r"(?<=\s)(?:(?:-[a-zA-Z]{0,8}u|-U)[ \t]*|--(?:proxy-)?user(?:[ \t]+|=))")
# The same argument read plainly, to the first blank or quote: a command inside a string of
# another language ("curl -u admin:…", shell=True) closes that string, not a shell word.
_PLAIN_USER = re.compile(r"""["']?(?P<user>[^\s"':]{0,128}):(?P<value>[^\s"']{1,256})""")
# A command's next lines, joined by a backslash right before each line's end, and its last line.
_CONTINUED_LINES = re.compile(r"(?:\n[^\n]*?\\\r?(?=\n))*\n[^\n]*")
_WORD_ENDS = frozenset(" \t\r\n;|&<>")
# The next command's curl: a word of its own (a password may hold the letters). A look reads to
# it at most, each curl being its own hit, so a text of many is read once, not once per curl.
_NEXT_CURL = re.compile(r"(?<![^\s;|&(])curl(?![\w.-])")
_REACH = 512
# The user flags one command's look reads: a line of many ``-u`` words stays linear.
_USER_FLAGS = 4
# A user and a password together: longer is not an argument people write.
_LONGEST_WORD = 256


def _command_end(text: str, line_end: int, reach: int) -> int:
    """Where a command ends, read on over its lines joined by a backslash-newline (curl's
    options are often one to a line), within ``reach``."""
    reach = min(reach, len(text))
    if line_end >= reach or not text.endswith(("\\", "\\\r"), max(0, line_end - 2), line_end):
        return min(line_end, reach)
    found = _CONTINUED_LINES.match(text, line_end, reach)
    return reach if found is None else found.end()


def curl_user_at(text: str, start: int, line_end: int) -> SecretSpan | None:
    """The password in curl's ``-u user:password`` after the ``curl`` ending at ``start``, or
    the user when the password is left empty: an API key passed as the user (``-u key:``). Each
    user flag is read in turn (a ``-u`` inside another argument's text finds no colon), over the
    command's lines to the next curl."""
    following = _NEXT_CURL.search(text, start, start + _REACH)
    limit = _command_end(text, line_end, start + _REACH if following is None else following.start())
    for found, _ in zip(_CURL_USER.finditer(text, start, limit), range(_USER_FLAGS), strict=False):
        span = _user_password(text, _shell_word(text, found.end(), limit))
        if span is None:
            span = _plain_password(_PLAIN_USER.match(text, found.end(), limit))
        if span is not None:
            return span
    return None


def _plain_password(found: re.Match[str] | None) -> SecretSpan | None:
    if found is None or found.group("value") == found.group("user"):
        return None
    if not _password_like(found.group("value"), literal=False):
        return None
    return SecretSpan(found.start("value"), found.end("value"), GENERIC)


def _user_password(text: str, read: list[tuple[int, bool]]) -> SecretSpan | None:
    colon = next((k for k, (position, _) in enumerate(read) if text[position] == ":"), -1)
    if colon < 0:
        return None
    user, password = read[:colon], read[colon + 1 :]
    if not password:  # ``-u key:``: the key is the credential
        if not user or not looks_random(_joined(text, user), quoted=True):
            return None
        return SecretSpan(user[0][0], user[-1][0] + 1, GENERIC)
    value = _joined(text, password)
    if value == _joined(text, user) or not _password_like(value, literal=password[0][1]):
        return None
    return SecretSpan(password[0][0], password[-1][0] + 1, GENERIC)


def _shell_word(text: str, at: int, limit: int) -> list[tuple[int, bool]]:
    """The characters of the shell word at ``at``, each as (where it stands, whether the shell
    takes it literally): quotes dropped, ``\\x`` read as ``x``, a backslash-newline as nothing,
    ``$'…'`` as a quoted string."""
    read: list[tuple[int, bool]] = []
    quote = ""
    limit = min(limit, at + _LONGEST_WORD)
    while at < limit:
        char = text[at]
        if quote == "'":  # to the closing quote at once: nothing inside is special
            closing = text.find("'", at, limit)
            if closing < 0:  # never closed (a snippet cut short): the rest of its line
                newline = text.find("\n", at, limit)
                closing = limit if newline < 0 else newline
            read += [(position, True) for position in range(at, closing)]
            quote, at = "", closing
        elif quote == '"':
            if char == '"':
                quote = ""
            elif char == "\\" and at + 1 < limit and text[at + 1] in '"\\$`':
                at += 1
                read.append((at, True))
            elif char != "\n":
                read.append((at, False))
        elif char in _WORD_ENDS:
            break
        elif char == "\\":
            at += 1
            if text.startswith("\r\n", at):
                at += 1
            elif at < limit and text[at] != "\n":
                read.append((at, True))
        elif char in "\"'":
            quote = char
        elif char == "$" and text.startswith("'", at + 1):
            quote, at = "'", at + 1
        else:
            read.append((at, False))
        at += 1
    return read


def _joined(text: str, read: list[tuple[int, bool]]) -> str:
    return "".join(text[position] for position, _ in read)


def _password_like(value: str, *, literal: bool) -> bool:
    """A value in a place that only ever holds a password: generated, chosen by a person, or
    drawn with digits turned off; not a variable the shell expands (``$PASS``, ``$(cat …)``)."""
    if value.startswith("$") and not literal:
        return False
    return (
        looks_random(value, quoted=True)
        or chosen_password(value, "password")
        or generated_letters(value)
    )
