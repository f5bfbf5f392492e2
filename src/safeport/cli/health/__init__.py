"""`sp status` and `sp doctor`: the whole installation at a glance, and what to fix."""

__all__ = []
