"""The finders that read across lines or through an encoding, woken by their own anchors.

Each holds what it has judged of one text, so a second anchor inside a run, an object or a
document already judged costs nothing: the scanner asks them in text order, and the work stays
linear however many anchors a hostile text repeats.
"""

from __future__ import annotations

import re

from safeport.shared.secret_scan.encoded import (
    BASIC_ANCHORS,
    DER_ANCHORS,
    ENCODED_ANCHORS,
    EncodedSecrets,
    basic_credential_at,
)
from safeport.shared.secret_scan.jwk import Jwks
from safeport.shared.secret_scan.spans import SecretSpan
from safeport.shared.secret_scan.structured import KubeSecrets

ENCODED, DER, JWK, KUBE, BASIC = "encoded", "der", "jwk", "kube", "basic"
SHAPE_ANCHORS = {
    **dict.fromkeys(ENCODED_ANCHORS, ENCODED),
    **dict.fromkeys(DER_ANCHORS, DER),
    **dict.fromkeys(BASIC_ANCHORS, BASIC),
    "kty": JWK,
    **dict.fromkeys(("kind: Secret", '"kind": "Secret"', '"kind":"Secret"'), KUBE),
}
# ``kty`` as a member's name (``"kty":``, ``kty:``, ``'kty' =>``, JSON-escaped ``\"kty\":``),
# not inside a word (``sticky``).
_KTY_NAME = re.compile(r"""kty\\*["']?[ \t]*(?:[:=]|=>)""")


class Shapes:
    """The finders of one text, created as their first anchor comes."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._encoded: EncodedSecrets | None = None
        self._jwks: Jwks | None = None
        self._kube: KubeSecrets | None = None

    def at(self, shape: str, start: int, end: int, line_start: int) -> list[SecretSpan]:
        """The secrets the anchor ``text[start:end]`` of ``shape`` wakes."""
        text = self._text
        if shape == JWK:
            if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                return []
            if _KTY_NAME.match(text, start) is None:
                return []
            self._jwks = self._jwks or Jwks(text)
            return self._jwks.at(start, line_start)
        if shape == BASIC:
            found = basic_credential_at(text, end)
            return [found] if found is not None else []
        if shape == KUBE:
            self._kube = self._kube or KubeSecrets(text)
            return self._kube.at(start, line_start)
        self._encoded = self._encoded or EncodedSecrets(text)
        found = self._encoded.at(start, line_start, der=shape == DER)
        return [found] if found is not None else []
