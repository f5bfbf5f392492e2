"""What in a requester's environment puts other code into its program.

Variables that inject code (``LD_PRELOAD``, ``PYTHONPATH``, ``NODE_OPTIONS`` …); what a Python
loads before its script is ``python_startup``. Every value shown on a card is bounded.
"""

from __future__ import annotations

from pathlib import Path

from safeport.action_gateway.identity.injection import injected_entries, parse_environ
from safeport.action_gateway.identity.model import EnvironStatus
from safeport.shared.known_secrets import shorten

_MAX_ENVIRON_BYTES = 1024 * 1024
_MAX_SHOWN_VALUE = 200


def injected_environment(
    base: Path,
) -> tuple[EnvironStatus, tuple[tuple[str, str], ...], dict[str, str]]:
    """The requester's variables that inject code (and all of them, for the checks that need
    one); an environment that cannot be read whole (another uid, a non-dumpable process, padded
    past the limit) is "unreadable", which no ``[callers]`` rule by path or digest admits."""
    try:
        with open(base / "environ", "rb") as handle:
            raw = handle.read(_MAX_ENVIRON_BYTES + 1)
    except OSError:
        return "unreadable", (), {}
    if len(raw) > _MAX_ENVIRON_BYTES:
        return "unreadable", (), {}
    pairs = parse_environ(raw)
    found = injected_entries(pairs)
    return "read", tuple((name, bounded(value)) for name, value in found), dict(pairs)


def bounded(value: str) -> str:
    if len(value) <= _MAX_SHOWN_VALUE:
        return value
    return f"{shorten(value, _MAX_SHOWN_VALUE)} ({len(value) - _MAX_SHOWN_VALUE} more characters)"
