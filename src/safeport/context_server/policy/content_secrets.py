"""What the context server withholds from a file's text, per root.

Every secret the detector finds is withheld, less the values a person allowed back by
fingerprint (``[secrets] allow`` in ``context.toml``; only best-effort kinds, see
``shared.secret_scan.fingerprints``), and nothing at all under a root whose redaction the person
turned off (``[secrets] redaction_off``). That switch is loud: each call that served text from
such a root names it in :data:`UNREDACTED_ROOTS`, which the tool layer journals.

Pure apart from that note: the key and the lists come from the configuration loader.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from safeport.shared.secret_scan import (
    ALLOWABLE_KINDS,
    Finding,
    SecretSpan,
    find_secrets,
    fingerprint,
    redact_spans,
)

# The roots (real paths) whose text the current call served unredacted; the tool layer sets a
# fresh set around each call and journals what it holds.
UNREDACTED_ROOTS: ContextVar[set[str] | None] = ContextVar("unredacted_roots", default=None)

SecretFinder = Callable[[str], list[SecretSpan]]


@dataclass(frozen=True)
class ContentSecrets:
    """The detector as one served workspace applies it."""

    allowed: frozenset[str] = frozenset()
    # The fingerprint key: never printed, logged or compared outside ``fingerprint``.
    key: bytes | None = field(default=None, repr=False)
    unredacted_roots: frozenset[Path] = frozenset()
    # Whether context.toml turns redaction off for any folder at all (served here or not).
    off_anywhere: bool = False

    def finder(self, root: Path) -> SecretFinder:
        """The spans to withhold from a text of a file under ``root``."""
        if root in self.unredacted_roots:

            def nothing(_text: str) -> list[SecretSpan]:
                noted = UNREDACTED_ROOTS.get()
                if noted is not None:
                    noted.add(str(root))
                return []

            return nothing
        if not self.allowed or self.key is None:
            return find_secrets
        return self.withheld

    def withheld(self, text: str) -> list[SecretSpan]:
        """Every secret in ``text`` but a best-effort finding whose exact value is allowed."""
        return [span for span in find_secrets(text) if not self.is_allowed(text, span)]

    def is_allowed(self, text: str, span: SecretSpan) -> bool:
        if span.kind not in ALLOWABLE_KINDS or self.key is None or not self.allowed:
            return False
        return fingerprint(text[span.start : span.end], self.key) in self.allowed

    def rules_digest(self) -> str:
        """A digest of the rules ("" for the defaults): text withheld under other rules is
        never mixed with text withheld under these (the search index is kept per digest)."""
        if not self.unredacted_roots and not (self.allowed and self.key is not None):
            return ""
        # Fingerprints are keyed already; the digest of them and the roots says nothing more.
        parts = ["allow", *sorted(self.allowed), "off", *sorted(map(str, self.unredacted_roots))]
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()

    def redact(self, text: str, root: Path) -> tuple[str, tuple[Finding, ...]]:
        """``text`` (of a file under ``root``) with what this workspace withholds replaced."""
        spans = self.finder(root)(text)
        return redact_spans(text, spans) if spans else (text, ())
