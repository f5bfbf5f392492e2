"""The MCP clients' own configuration files: installing safeport into them and checking
what they hold, and asking the clients themselves."""

__all__ = [
    "checks",
    "config_files",
    "install",
    "verify",
]
