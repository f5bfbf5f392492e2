"""The MCP clients' own configuration files: installing safeport into them and checking
what they hold."""

__all__ = [
    "checks",
    "config_files",
    "install",
]
