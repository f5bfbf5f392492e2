"""Starting the gateway: the real parts chosen in one place, the process hardened, the
sockets served until stop."""

__all__ = [
    "assembly",
    "hardening",
    "run",
]
