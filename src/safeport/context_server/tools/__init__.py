"""The MCP tools: the reader's, the agent profile's proposals, and the one wrapper every
call goes through."""

__all__ = []
