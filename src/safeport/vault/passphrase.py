"""What a vault passphrase must be: not empty (refused), and not too weak to stand an offline
guessing attack (a warning).

Anyone who copies vault.sp can try passphrases at the KDF's pace on their own hardware, with no
gateway to slow them down; a short or common passphrase falls in hours. This is a warning for
the person choosing one, not a rule: the judgment is deliberately simple and explainable.
"""

from __future__ import annotations

from safeport.errors import UsageError
from safeport.vault.secrets import SecretBytes

MIN_LENGTH = 12
_COMMON = frozenset(
    {"password", "passphrase", "safeport", "letmein", "qwerty", "admin", "secret", "changeme"}
)


def weakness(passphrase: SecretBytes) -> str | None:
    """Why ``passphrase`` is weak, or None."""
    text = passphrase.reveal().decode("utf-8", "replace")
    folded = text.casefold().strip()
    if folded.rstrip("0123456789!") in _COMMON or folded.isdigit():
        return "it is a common password"
    if len(text) < MIN_LENGTH:
        return f"it has {len(text)} characters; use at least {MIN_LENGTH}, or four random words"
    if len(set(text)) <= 3:
        return "it repeats the same few characters"
    return None


def require_passphrase(passphrase: SecretBytes) -> None:
    """Refuse an empty passphrase before anything is changed."""
    if len(passphrase) == 0:
        raise UsageError("the passphrase is empty", hint="type a passphrase (nothing was changed)")
