"""What each tool does, below MCP: folders, reading and excerpts, search, activity, the
reads journal and the typed results."""

__all__ = []
