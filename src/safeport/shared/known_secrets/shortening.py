"""The one way a message is cut to fit a reply, a card, a journal record or a log line.

A message from a remote side (a database's error quoting the value it refused, an exception's
text) can hold a secret. Cutting it first and redacting after would let the cut land inside the
secret, and a redaction that looks for the whole secret would then miss its first characters.
So the order is fixed here, for every place that shortens:

1. every known secret (the action's credential), in each form listed by :func:`secret_forms`,
   is replaced by ``[REDACTED]``; a message that still holds one (another encoding, a 16-byte
   run of it: :class:`~safeport.shared.known_secrets.views.KnownSecrets`) is withheld whole;
2. every secret the detector finds (:func:`safeport.shared.secret_scan.redact`) is replaced;
3. then the text is cut, and if what is left ends with the first characters of a known secret
   in any of its forms (however few: dropping a harmless character costs nothing), those
   characters are dropped too.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from urllib.parse import quote

from safeport.shared.known_secrets.views import KnownSecrets
from safeport.shared.secret_scan import redact

REDACTED = "[REDACTED]"
WITHHELD = "(the message held the credential and was withheld)"
ELLIPSIS = "…"


def shorten(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """``text`` redacted, then cut to at most ``limit`` characters (``…`` marks a cut)."""
    known = [secret for secret in secrets if secret]
    forms = secret_forms(known)
    clean = text
    for form in forms:
        clean = clean.replace(form, REDACTED)
    if known and KnownSecrets(known).found_in(clean):
        return WITHHELD[:limit]
    clean, _ = redact(clean)
    if len(clean) <= limit:
        return clean
    cut = clean[: max(limit - len(ELLIPSIS), 0)]
    return _without_secret_start(cut, forms) + ELLIPSIS


def first_line(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """``text``'s first line, as :func:`shorten` leaves it. The lines after it are cut off too:
    a first line ending inside a secret (a value with a line break in it, quoted in an error)
    loses the secret's start, as a cut inside the line would."""
    lines = text.strip().splitlines()
    if len(lines) <= 1:
        return shorten(text.strip(), limit, secrets)
    short = shorten(lines[0], limit, secrets)
    if short.endswith(ELLIPSIS):
        return short  # already cut inside the line, its end checked there
    return _without_secret_start(short, secret_forms(secret for secret in secrets if secret))


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """The texts a known secret is written as in a message or a reply: as it is, JSON-escaped
    (ASCII-only and not), percent-encoded, hex (lower and upper case) and base64 and base64url
    at each of the three offsets a longer encoded value can put it at (the characters that
    depend on the neighbouring bytes left off). Longest first, so a replacement never leaves
    part of a longer form behind."""
    forms: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        raw = secret.encode("utf-8", "surrogatepass")
        forms.update(
            {
                secret,
                json.dumps(secret)[1:-1],
                json.dumps(secret, ensure_ascii=False)[1:-1],
                quote(secret, safe=""),
                raw.hex(),
                raw.hex().upper(),
            }
        )
        forms.update(_base64_forms(raw))
    return sorted((form for form in forms if form), key=len, reverse=True)


def _base64_forms(raw: bytes) -> Iterator[str]:
    """The characters of ``raw``'s base64 that do not depend on the bytes around it, for the
    secret at offset 0, 1 and 2 of a 3-byte group."""
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii").rstrip("=")
        tail = (offset + len(raw)) % 3
        # The last character of a partial group also carries bits of what follows.
        middle = encoded[skip : len(encoded) - (1 if tail else 0)]
        if middle:
            yield middle
            yield middle.replace("+", "-").replace("/", "_")


def _without_secret_start(cut: str, forms: list[str]) -> str:
    """``cut`` without a trailing fragment that is the start of a known secret's form."""
    longest = 0
    for form in forms:
        for size in range(min(len(form) - 1, len(cut)), longest, -1):
            if cut.endswith(form[:size]):
                longest = size
                break
    return cut[: len(cut) - longest]
