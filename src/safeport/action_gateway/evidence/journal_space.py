"""Free space where the journals live, asked before a proposal may make the gateway write.

Every step of a proposal is journaled before it proceeds, so a proposal on a disk that is about
to fill would be refused anyway, later and with a write that may fail half way. Below the
reserve, proposals are refused at once with a reason that says so, while control.sock keeps
working (status, lock, stop, deciding cards: their few records fit in the reserve). Nothing has
to restart when space comes back: the next proposal finds it and goes on.

The check is a ``statvfs`` of the audit folder, made at most every ``CHECK_EVERY_S`` so a flood
of proposals does not turn into a flood of system calls.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from safeport.shared.schemas.results import JournalSpace as JournalSpaceView

RESERVE_BYTES = 64 * 1024 * 1024
CHECK_EVERY_S = 0.25


def space_low(free_bytes: int, reserve_bytes: int) -> bool:
    return free_bytes < reserve_bytes


def _mib(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB"


class JournalSpace:
    def __init__(
        self,
        folder: Path,
        reserve_bytes: int = RESERVE_BYTES,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._folder = folder
        self.reserve_bytes = reserve_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._checked_at = float("-inf")
        self._free = -1

    def free_bytes(self) -> int:
        """Bytes an unprivileged writer may still use there (-1: the folder cannot be asked)."""
        now = self._clock()
        with self._lock:
            if now - self._checked_at >= CHECK_EVERY_S:
                try:
                    st = os.statvfs(self._folder)
                    self._free = st.f_bavail * st.f_frsize
                except OSError:
                    self._free = -1
                self._checked_at = now
            return self._free

    def low_reason(self) -> str | None:
        """Why proposals are refused now, or None when there is room."""
        free = self.free_bytes()
        if free < 0 or not space_low(free, self.reserve_bytes):
            return None  # a folder that cannot be asked: the write itself will say
        return (
            f"the disk holding the gateway's journals is almost full ({_mib(free)} free, "
            f"{_mib(self.reserve_bytes)} kept for the human's commands); proposals are refused "
            "until space is freed"
        )

    def view(self, refusals_counted: int = 0) -> JournalSpaceView:
        """What `sp status` shows of the disk, with the refusals only counted (see
        :class:`~safeport.action_gateway.evidence.journals.RefusalRecords`)."""
        free = self.free_bytes()
        return JournalSpaceView(
            free_bytes=free,
            reserve_bytes=self.reserve_bytes,
            low=free >= 0 and space_low(free, self.reserve_bytes),
            refusals_counted=refusals_counted,
        )
