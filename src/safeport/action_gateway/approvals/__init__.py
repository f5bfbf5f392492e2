"""Asking a human: approval cards, the broker that holds them until a decision or the
deadline, per-session grants, the rules on who may approve, and the desktop notice."""

__all__ = []
