"""Writing policy: turning descriptions people already have into gateway.toml entries."""

__all__ = [
    "openapi_import",
]
