"""`sp vault`: the encrypted credential store, and how a credential's value is read in without
ever passing through argv or the environment."""

__all__ = []
