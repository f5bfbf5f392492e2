"""agent.sock and control.sock: binding, accepting with each uid's share, framing, the
first-message and frame timeouts, and the per-message sender check."""

__all__ = []
