"""The served roots on disk: resolving a path through descriptors, listing and walking
folders, and the serving configuration."""

__all__ = []
