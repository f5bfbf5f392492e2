"""The two capabilities identifying other users' processes takes, and reading whether this
process holds one: identity's own facts, which the install's start checks also use."""

from __future__ import annotations

from pathlib import Path

CAP_DAC_READ_SEARCH = 2
CAP_SYS_PTRACE = 19


def has_capability(bit: int, status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process holds capability ``bit`` in its effective set (Linux)."""
    try:
        text = status.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False
