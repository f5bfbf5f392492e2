"""The search index (SQLite FTS5 shards), its refresh by inotify events, and the change
feed."""

__all__ = []
