"""Keys rather than API tokens: NATS NKEY seeds, TOTP seeds in ``otpauth://`` links,
1Password account secret keys and Azure's identifiable keys.

Public halves are left alone: an NKEY's public key starts with its type letter (``U``, ``A``,
``O``, ``N``, ``C``, ``X``), its seed with ``S``; only the seed is a secret.
"""

from __future__ import annotations

from safeport.shared.secret_scan.checks import shannon_bits
from safeport.shared.secret_scan.providers.token_rule import B, E, TokenRule, rule


def _base32_drawn(value: str) -> bool:
    body = value[3:]
    return any(c.isdigit() for c in body) and shannon_bits(body) >= 3.5


def _azure_key(value: str) -> bool:
    """The 52 characters before the signature are the random part (about 5.3 bits each when
    drawn); the rest is structure (dates, a provider code, a checksum) and holds runs of A's by
    design. A typed run of one or two characters there is a stand-in."""
    return shannon_bits(value[:52]) >= 3.5


KEY_RULES: tuple[TokenRule, ...] = (
    # A seed is base32 of a seed prefix, the key's type and 32 random bytes: the first three
    # characters are fixed per type (SU… user, SA… account, SO… operator, SN… server, SC…
    # cluster, SX… curve), then 55 more.
    rule(
        "nats-nkey-seed",
        tuple(f"S{t}A" for t in "UAONCX"),
        B + r"S[UAONCX]A[A-Z2-7]{55}" + E,
        _base32_drawn,
    ),
    # The seed of an authenticator app entry: the ``secret`` parameter, in any position.
    rule(
        "otp-secret",
        "otpauth://",
        r"otpauth://[th]otp/[^\s?\"'<>]{0,256}\?(?:[^\s\"'<>#]{0,512}?&)?"
        r"(?i:secret)=(?P<secret>[A-Za-z2-7]{16,256}={0,6})(?![A-Za-z0-9])",
    ),
    # A 1Password account's Secret Key, which with the account password unlocks the vault.
    rule(
        "onepassword-secret-key",
        "A3-",
        # Written with its dashes, or with the one inside its third group left out.
        B + r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{5,6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}" + E,
    ),
    # Microsoft's identifiable keys (Azure DevOps PATs, Cognitive Services, Search and more):
    # 52 random characters, the JQQJ9 signature, then structure and a checksum.
    rule(
        "azure-identifiable-key",
        "JQQJ9",
        r"(?<![A-Za-z0-9+/])[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9][A-L][A-Za-z0-9]{16}"
        r"[A-Za-z][A-Za-z0-9]{7}(?:[A-Za-z0-9]{2}==)?(?![A-Za-z0-9+/])",
        _azure_key,
        lead=True,
        runs=True,
    ),
)
