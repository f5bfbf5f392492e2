"""`sp policy` and `sp ssh`: checking, reviewing, accepting and editing gateway.toml, and the
host keys a human pins in it."""

__all__ = []
