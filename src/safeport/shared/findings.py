"""What `sp doctor` reports: one check's state, what it found and how to fix it.

Shared so that each component checks its own part (the gateway its files, sockets, policy and
declared hosts; the context server its clients' entries) and the CLI only prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

State = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    """``ok``, ``warn`` (works, but worth knowing) or ``fail`` (something will not work)."""

    check: str
    state: State
    detail: str
    fix: str = ""
