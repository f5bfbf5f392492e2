"""`sp gateway`: running, stopping, reloading and installing the action gateway as a service."""

__all__ = []
