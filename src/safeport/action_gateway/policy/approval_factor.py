"""Which approvals need a security key's touch (`approval_factor = "key"`), and whether a new
policy lets the passphrase alone approve what needed a key before. Pure."""

from __future__ import annotations

from safeport.shared.schemas.config import GatewayPolicy


def key_factor(policy: GatewayPolicy | None, credential: str | None = None) -> bool:
    """Whether a yes for ``credential`` (any, when None) needs an enrolled key's touch."""
    if policy is None:
        return False
    if policy.approvals.approval_factor == "key":
        return True
    if credential is None:
        return any(c.approval_factor == "key" for c in policy.credentials.values())
    found = policy.credentials.get(credential)
    return found is not None and found.approval_factor == "key"


def loosens_factor(old: GatewayPolicy | None, new: GatewayPolicy) -> bool:
    """Whether ``new`` lets a card be approved without a key where ``old`` needed one."""
    if old is None:
        return False
    if old.approvals.approval_factor == "key" and new.approvals.approval_factor != "key":
        return True
    if old.approvals.user_verification and not new.approvals.user_verification:
        return True
    return any(key_factor(old, name) and not key_factor(new, name) for name in old.credentials)
