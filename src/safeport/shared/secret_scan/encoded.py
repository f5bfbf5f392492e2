"""Secrets encoded once more in base64, and private keys in bare base64 DER.

- a PEM private key, base64-encoded whole (``LS0tLS1CRUdJTi…`` is the base64 of
  ``-----BEGIN``): a kubeconfig's ``client-key-data``, a Helm value, a CI variable;
- a private JWK or a JWKS holding one, base64-encoded;
- a JWT, base64-encoded (``ZXlK…`` is the base64 of ``eyJ``);
- ``user:password`` in base64 after ``Basic`` (an ``Authorization`` header, a curl line, a
  proxy setting), whatever name stands before it;
- a private key's DER in base64 without PEM markers (``MIIE…``, ``MHcC…``), in XML, a
  properties file or a variable.

The prefilter anchors on the base64 of each marker at each of its three alignments
(:func:`encoded_forms`), so a marker is found wherever it sits in the encoded text. At a hit the
base64 run around it is decoded, its lines counted as one run when they are wrapped at one width
(as ``base64``, ``openssl`` and PEM write them), and the decoded text is judged by the same
finders as plain text: a private key block, a private JWK, a JWT. A DER key is known by its
structure: a SEQUENCE whose length is the run's, holding version 0 or 1 and then a modulus, an
algorithm identifier or an EC key's octets. A certificate, a public key, a CSR or a CMS blob
starts otherwise, so none is taken for a key.

Each run is decoded once, however many anchors it holds, and is at most ``MAX_RUN`` long.
"""

from __future__ import annotations

import base64
import binascii
import re

from safeport.shared.secret_scan.checks import is_jwt, is_placeholder
from safeport.shared.secret_scan.jwk import Jwks
from safeport.shared.secret_scan.private_keys import KeyBlocks
from safeport.shared.secret_scan.spans import SecretSpan

MAX_RUN = 128 * 1024  # base64 of a 64 KB key block
MIN_WRAP = 48  # the narrowest width encoders wrap at (PEM writes 64, ``base64`` 76)
_BACK = 4096  # how far before a marker's encoding its run may start


def encoded_forms(plain: bytes) -> tuple[str, ...]:
    """The base64 of ``plain`` at each of its three alignments: the characters that ``plain``
    alone decides, whatever bytes come before and after it."""
    forms = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + plain).decode()
        forms.append(encoded[(shift * 8 + 5) // 6 : (shift + len(plain)) * 8 // 6])
    return tuple(forms)


# A JWT is the whole of what was encoded, so only its first alignment is looked for.
ENCODED_ANCHORS = (*encoded_forms(b"-----BEGIN"), *encoded_forms(b'"kty"'), "ZXlK")
# DER private keys: SEQUENCE with a long (``MII``, ``MIG``) or short (``MHc``, ``MHQ``: EC keys;
# ``MC4C``, ``MFEC``: Ed25519 and X25519 in PKCS#8) length, each then judged by its structure.
DER_ANCHORS = ("MII", "MIG", "MHc", "MHQ", "MC4C", "MFEC", "MEcC", "MGcC")

# The scheme in its three usual spellings; the automaton matches case exactly.
BASIC_ANCHORS = ("Basic ", "basic ", "BASIC ")
_BASIC_VALUE = re.compile(r"[ \t]*(?P<value>[A-Za-z0-9+/]{8,1024}={0,2})(?![A-Za-z0-9+/=])")
_TOKEN = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/_-]")
_LINE = re.compile(r"[ \t]*[\"']?(?P<token>[A-Za-z0-9+/_-]+={0,2})[\"',]?[ \t]*\r?")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")


class EncodedSecrets:
    """The encoded secrets of one text, asked for at each anchor in text order."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._reached = 0

    def at(self, start: int, line_start: int, *, der: bool) -> SecretSpan | None:
        """The base64 run holding the anchor at ``start``, if what it encodes is a secret."""
        text = self._text
        if start < self._reached:
            return None
        if der:
            if start > 0 and text[start - 1] in _BASE64_CHARS:
                return None  # a DER key is the start of its run
            if not _der_private_key_head(text[start : start + 16]):
                return None
        run = _run(text, start, max(start - _BACK, self._reached), line_start)
        if run is None:
            return None
        self._reached = run[1]
        decoded = _decode(text[run[0] : run[1]])
        if decoded is None:
            return None
        kind = _der_private_key(decoded) if der else _encoded_secret(decoded)
        return SecretSpan(run[0], run[1], kind) if kind else None


def _run(text: str, at: int, floor: int, line_start: int) -> tuple[int, int] | None:
    """The base64 run around ``at``: its token on the line, and the lines before and after it
    wrapped at the same width, none before ``floor``."""
    start = max(floor, line_start)
    for outside in _NOT_BASE64.finditer(text, start, at):
        start = outside.end()
    end = _TOKEN.match(text, at, min(len(text), start + MAX_RUN)).end()  # type: ignore[union-attr]
    width = end - start
    if width < 4:
        return None
    if width < MIN_WRAP:
        return start, end
    own = _line_token(text, line_start)
    if own is None or own != (start, end):
        return start, end  # not a line of its own: not wrapped
    # Up: whole lines of the same width.
    top = line_start
    while top > floor:
        above = text.rfind("\n", floor, top - 1) + 1
        token = _line_token(text, above)
        if above < floor or token is None or token[1] - token[0] != width:
            break
        start, top = token[0], above
    # Down: lines as wide as the first; a shorter one is the last.
    while (newline := text.find("\n", end, end + 4)) >= 0 and end - start < MAX_RUN:
        token = _line_token(text, newline + 1)
        if token is None or token[1] - token[0] > width:
            break
        end = token[1]
        if token[1] - token[0] < width:
            break
    return start, end


def _line_token(text: str, line_start: int) -> tuple[int, int] | None:
    """The one base64 token that is the whole of the line at ``line_start`` (indentation,
    a quote and a comma aside)."""
    newline = text.find("\n", line_start, line_start + MAX_RUN)
    line = _LINE.fullmatch(text, line_start, len(text) if newline < 0 else newline)
    return (line.start("token"), line.end("token")) if line else None


def _decode(run: str) -> bytes | None:
    compact = _NOT_BASE64.sub("", run).replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4))
    except (binascii.Error, ValueError):
        return None


def _encoded_secret(decoded: bytes) -> str | None:
    """What secret ``decoded`` is, judged as plain text is."""
    text = decoded.decode("utf-8", "replace")
    marker = text.find("PRIVATE KEY")
    if marker >= 0:
        found = KeyBlocks(text).at(marker, text.rfind("\n", 0, marker) + 1)
        if found is not None:
            return found.kind
    marker = text.find('"kty"')
    if marker >= 0 and Jwks(text).at(marker, text.rfind("\n", 0, marker) + 1):
        return "private-key"
    token = text.strip().split(None, 1)[0] if text.strip() else ""
    if token.startswith("eyJ") and token.count(".") == 2 and is_jwt(token):
        return "jwt"
    return None


def basic_credential_at(text: str, end: int) -> SecretSpan | None:
    """The base64 ``user:password`` after the ``Basic`` scheme ending at ``end``."""
    found = _BASIC_VALUE.match(text, end)
    if found is None:
        return None
    decoded = _decode(found.group("value"))
    try:
        plain = decoded.decode("utf-8") if decoded is not None else ""
    except UnicodeDecodeError:
        return None  # prose after the word "basic" decodes to bytes that are not text
    user, colon, password = plain.partition(":")
    if not colon or not user.isprintable() or not password.isprintable():
        return None
    if len(password) < 4 or is_placeholder(password) or password == user:
        return None
    return SecretSpan(found.start("value"), found.end("value"), "authorization-header")


def _der_private_key_head(head: str) -> bool:
    """Whether the first 16 base64 characters start a DER private key (see the module's notes)."""
    decoded = _decode(head) if len(head) == 16 else None
    return decoded is not None and _der_layout(decoded) is not None


def _der_layout(der: bytes) -> int | None:
    """The length a DER private key starting with ``der`` declares, header included."""
    if len(der) < 8 or der[0] != 0x30:
        return None
    if der[1] == 0x82:
        length, offset = (der[2] << 8) | der[3], 4
    elif der[1] == 0x81:
        length, offset = der[2], 3
    elif der[1] < 0x80:
        length, offset = der[1], 2
    else:
        return None
    version = der[offset : offset + 3]
    if version not in (b"\x02\x01\x00", b"\x02\x01\x01") or der[offset + 3] not in (2, 4, 0x30):
        return None
    return offset + length


def _der_private_key(decoded: bytes) -> str | None:
    declared = _der_layout(decoded)
    # The run is the key: its length is what the SEQUENCE declares (a few bytes of padding
    # aside), so a run that only starts like a key is not taken for one.
    if declared is None or not declared <= len(decoded) <= declared + 2:
        return None
    return "private-key"


_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
# What may follow a padded base64 field: a field separator (a hashed known_hosts line's ``|``),
# a space, a quote, the line's end.
_PADDED_TAIL = re.compile(r"[A-Za-z0-9+/]*(?P<padding>={1,2})")
_AFTER_PADDING = frozenset("|: \t\r\n\"',;")


def inside_base64_run(text: str, start: int, end: int, line_start: int, line_end: int) -> bool:
    """Whether the word at ``text[start:end]`` is letters of a padded base64 run (a hashed
    known_hosts entry's ``…69Pw=|``), not a name: the run and its ``=`` padding fill a multiple
    of four, it is long and holds digits and both cases, and a separator follows the padding."""
    # The padding is looked for first, at C speed (its "=", then the run before it): most words
    # inside identifiers have none.
    limit = min(line_end, end + 512)
    if text.find("=", end, limit) < 0:
        return False
    tail = _PADDED_TAIL.match(text, end, limit)
    if tail is None:
        return False
    after = tail.end()
    if after < line_end and text[after] not in _AFTER_PADDING:
        return False
    run_end = tail.start("padding")
    padding = after - run_end
    run_start = start
    while run_start > max(line_start, start - 512) and text[run_start - 1] in _BASE64_CHARS:
        run_start -= 1
    run = text[run_start:run_end]
    if len(run) < 20 or (len(run) + padding) % 4:
        return False
    return any(c.isdigit() for c in run) and not run.islower() and not run.isupper()
