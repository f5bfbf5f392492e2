"""Fixed-vector HTTPS: the checked target and address, a connection pinned to it, deadlines
on every read and write, the response contract and the credential-echo check."""

__all__ = [
    "tls",
]
