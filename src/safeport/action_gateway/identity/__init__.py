"""Who is asking: the peer's process chain as the kernel reports it (uid, pid and start time,
the mapped binary and its package record), what the requester only claims (its command line, its
script), and the code its environment or Python's start-up files would inject."""

__all__ = [
    "injection",
    "model",
    "platform",
]
