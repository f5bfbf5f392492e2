"""Credentials from OpenBao or Vault servers: a KV v2 value or an SSH certificate per action,
fetched after approval and held only for it; leases revoked after."""

__all__ = []
