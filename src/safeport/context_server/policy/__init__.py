"""The read policy, decided without touching the disk: private and ignored names, the
grammar of a requested path, and how names are displayed."""

__all__ = []
