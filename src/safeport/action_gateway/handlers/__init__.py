"""The operations each socket answers: an agent's proposals and catalog, and the
control operations (vault, approvals, policy, status) with the passphrase proof and its
delays."""

__all__ = []
