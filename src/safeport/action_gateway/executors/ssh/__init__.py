"""Fixed-vector SSH: a pinned host key, one command line prepared before approval, a pooled
transport, and the scan a human uses to pin a host's key."""

__all__ = [
    "host_key_scan",
]
