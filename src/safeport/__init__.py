"""safeport: a read-only context server and a credential-holding action gateway for local agents.

The package's public surface is deliberately small; each component names its own public API in
its ``__init__``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
