"""stdio: the lean JSON-RPC transport and the direct answers for bounded tools."""

__all__ = []
