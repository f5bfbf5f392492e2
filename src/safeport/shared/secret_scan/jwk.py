"""Private JSON Web Keys (RFC 7517, 7518): an object with ``kty`` and a private member, ``d``
(RSA, EC, OKP keys), RSA's ``p``, ``q``, ``dp``, ``dq`` and ``qi``, or a symmetric key's ``k``.

Only the private members' values are withheld: the rest of the object (``kid``, ``alg``, the
public ``n``, ``e``, ``x``, ``y``) is what a reader needs to know which key it is, and a public
JWK or a JWKS of public keys is served whole. JSON (also escaped inside a string, as in a
notebook or a log line), a JSON object spread over lines, and YAML alike.

Each look starts at a ``kty`` the prefilter found and reads at most the object around it (a
JWK is small: a 16384-bit RSA key with every member is about 15 KB), and an object is judged
once, however many ``kty`` it holds.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.checks import is_placeholder
from safeport.shared.secret_scan.spans import SecretSpan

KIND = "private-key"
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "k")
MAX_OBJECT = 32 * 1024
# How far before ``kty`` the object's opening brace may be; members come in any order.
_OPENING_WINDOW = 4096
# A YAML mapping's members around ``kty``: as many lines up and down as a JWK has members.
_YAML_LINES = 16
_MIN_VALUE = 16  # base64url characters; the shortest real member (a 128-bit ``k``) has 22

_MEMBERS = "|".join(PRIVATE_MEMBERS)
_JSON_MEMBER = re.compile(
    rf"""(?<![\w-])(?P<quote>\\*["'])(?:{_MEMBERS})(?P=quote)[ \t]*:[ \t]*"""
    rf"""(?P<value_quote>\\*["'])(?P<value>[A-Za-z0-9_\-+/]{{{_MIN_VALUE},}}={{0,2}})"""
    r"(?P=value_quote)"
)
_YAML_MEMBER = re.compile(
    rf"""(?m)^(?P<indent>[ \t]*(?:-[ \t]+)?)(?:{_MEMBERS})[ \t]*:[ \t]*(?P<quote>["']?)"""
    rf"(?P<value>[A-Za-z0-9_\-+/]{{{_MIN_VALUE},}}={{0,2}})(?P=quote)[ \t]*\r?$"
)
_INDENT = re.compile(r"[ \t]*(?:-[ \t]+)?")


class Jwks:
    """The private members of the JWKs of one text, asked for at each ``kty`` in text order."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._reached = 0

    def at(self, start: int, line_start: int) -> list[SecretSpan]:
        """The private members' values of the JWK whose ``kty`` is at ``start``."""
        if start < self._reached:
            return []
        text = self._text
        opening = text.rfind("{", max(0, start - _OPENING_WINDOW), start)
        closing = text.find("}", start, start + MAX_OBJECT) if opening >= 0 else -1
        if opening >= 0 and closing >= 0:
            self._reached = closing
            return [
                SecretSpan(m.start("value"), m.end("value"), KIND)
                for m in _JSON_MEMBER.finditer(text, opening, closing)
                if not is_placeholder(m.group("value"))
            ]
        return self._yaml_members(start, line_start)

    def _yaml_members(self, start: int, line_start: int) -> list[SecretSpan]:
        text = self._text
        indent = _width(text, line_start)
        low, high = line_start, start
        for _ in range(_YAML_LINES):
            low = text.rfind("\n", 0, max(low - 1, 0)) + 1
            newline = text.find("\n", high + 1)
            high = len(text) if newline < 0 else newline
        self._reached = high
        return [
            SecretSpan(m.start("value"), m.end("value"), KIND)
            for m in _YAML_MEMBER.finditer(text, low, high)
            if _width(text, m.start()) == indent and not is_placeholder(m.group("value"))
        ]


def _width(text: str, line_start: int) -> int:
    """The indentation of a YAML mapping's line, counting a list item's dash as indentation."""
    return _INDENT.match(text, line_start).end() - line_start  # type: ignore[union-attr]
