"""The `sp` command: each command parses, makes one library call, and renders."""

from safeport.cli.app import main, sp

__all__ = ["main", "sp"]
