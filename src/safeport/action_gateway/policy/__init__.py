"""The accepted gateway.toml and the pure decisions read from it: callers, arguments, rate
caps and each uid's share, the catalog an agent sees, and the review and diff of meaning a human
reads before accepting an edit."""

__all__ = [
    "approval_factor",
    "authorized_keys",
    "inventory",
    "meaning",
    "review",
    "store",
]
