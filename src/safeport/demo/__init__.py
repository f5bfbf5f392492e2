"""`sp demo`: a self-contained end-to-end run on an embedded default configuration.

Its public surface is the ``scenario`` module the CLI runs; nothing is bound here, so the demo's
agent process (``python -m safeport.demo.agent``) loads only what it uses.
"""

__all__ = ["scenario"]
