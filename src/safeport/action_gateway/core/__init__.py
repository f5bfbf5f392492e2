"""The gateway's state and use cases (vault state, policy served, approvals, evidence),
composed from the other rooms."""

__all__ = []
