"""Credentials in URLs: the password of ``scheme://user:password@host``, and the value of a
secret-like parameter in a query encoded inside another URL's parameter."""

from __future__ import annotations

import re
from urllib.parse import unquote

from safeport.shared.secret_scan.assignments import GENERIC, MAX_NAME
from safeport.shared.secret_scan.checks import is_placeholder, looks_random
from safeport.shared.secret_scan.names import name_words, secret_name
from safeport.shared.secret_scan.spans import SecretSpan

# A password may hold an unescaped "@" (``user:p@ss@host``): the userinfo ends at the LAST "@"
# before the host, as URL parsers read it. The parts after the first "@" stop at "?" and "#" too,
# so an address in the query (``host?to=a@b``) is not taken for the end of a password.
# The login may itself be an email address (``smtps://me@example.com:pw@host``): one "@" inside
# the user part, before the colon.
_URL_USERINFO = re.compile(
    r"://(?P<user>[^\s/:@\"'<>\\]{0,128}(?:@[^\s/:@\"'<>\\]{1,128})?)"
    r":(?P<password>[^\s/@\"'<>\\]{1,256}(?:@[^\s/@?#\"'<>\\]{0,256})*)@(?=[\w\[])"
)

# A query string encoded inside another URL's parameter: ``…%26token%3D<value>%26…``. The value
# runs to the next encoded "&" (or any character a query may not hold unencoded).
_ENCODED_VALUE = re.compile(r"%3[Dd](?P<value>(?:[A-Za-z0-9._~\-]|%(?!26)[0-9A-Fa-f]{2}){1,256})")


def url_credential_at(text: str, start: int, line_end: int) -> SecretSpan | None:
    """The password of ``scheme://user:password@host``; a placeholder password is left alone."""
    if text.find("@", start, line_end) < 0:
        return None  # most URLs hold no userinfo: a search for its "@" is cheaper than the match
    found = _URL_USERINFO.match(text, start, line_end)
    if found is None:
        return None
    password = found.group("password")
    if is_placeholder(password) or password == found.group("user") or "," in password:
        return None
    return SecretSpan(found.start("password"), found.end("password"), "password-in-url")


def encoded_query_at(
    text: str, start: int, end: int, line_start: int, line_end: int
) -> SecretSpan | None:
    """The value of a secret-like parameter in a URL-encoded query (``%26token%3D…%26``)."""
    name_end = end
    while name_end < min(line_end, end + MAX_NAME) and (
        text[name_end].isalnum() or text[name_end] in "_-"
    ):
        name_end += 1
    found = _ENCODED_VALUE.match(text, name_end, line_end)
    if found is None:
        return None
    name_start = start
    floor = max(line_start, start - MAX_NAME)
    while name_start > floor and (text[name_start - 1].isalnum() or text[name_start - 1] in "_-"):
        name_start -= 1
    if text[name_start - 1 : name_start] == "%":
        name_start += 2  # "%26token": the walk back took the escape's two digits for the name
    name = text[name_start:name_end]
    words = name_words(name)
    if not words or not secret_name(name, words):
        return None
    value = unquote(found.group("value"))
    if is_placeholder(value) or not looks_random(value, quoted=True):  # delimited by %26
        return None
    return SecretSpan(found.start("value"), found.end("value"), GENERIC)
