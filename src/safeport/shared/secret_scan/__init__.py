"""Find and redact secrets inside ordinary text: provider tokens by their published formats,
private key blocks, credentials in URLs and config shapes, and random literals assigned to
secret-like names.

Pure and credential-free (no I/O, no state), so the context server and the gateway both use it.
:func:`find_secrets` returns spans (offsets and a kind, never the value); :func:`redact` replaces
each with ``[REDACTED:<kind>]`` keeping every line break, and returns findings (kind and lines).
Known formats and private keys are what it guarantees; generic assignments are best effort.
:func:`fingerprint` names a value by a keyed hash, so a false positive of the best-effort kind
(:data:`ALLOWABLE_KINDS`) can be allowed back without writing the value anywhere.
"""

from safeport.shared.secret_scan.fingerprints import (
    ALLOWABLE_KINDS,
    KEY_BYTES,
    fingerprint,
    is_fingerprint,
)
from safeport.shared.secret_scan.redaction import marker, redact, redact_spans
from safeport.shared.secret_scan.scanner import find_secrets
from safeport.shared.secret_scan.spans import Finding, SecretSpan

__all__ = [
    "ALLOWABLE_KINDS",
    "KEY_BYTES",
    "Finding",
    "SecretSpan",
    "find_secrets",
    "fingerprint",
    "is_fingerprint",
    "marker",
    "redact",
    "redact_spans",
]
