"""A desktop notification that a card is waiting (optional; fixed text only).

The text never includes anything the agent chose: notification daemons may interpret markup,
and the card itself is the place to read the request (`sp approvals watch`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from safeport.shared.schemas.results import ApprovalEvent, CardOpened

TITLE = "safeport"
BODY = "An action is waiting for approval: run `sp approvals watch`"


def notifier_argv(platform: str, env: Mapping[str, str]) -> list[str] | None:
    """The command that shows the notification here, or None when there is no desktop."""
    if platform == "darwin":
        return ["/usr/bin/osascript", "-e", f'display notification "{BODY}" with title "{TITLE}"']
    if env.get("DBUS_SESSION_BUS_ADDRESS") and (path := _on_absolute_path("notify-send", env)):
        return [path, "--app-name", TITLE, TITLE, BODY]
    return None


def _on_absolute_path(program: str, env: Mapping[str, str]) -> str | None:
    """``shutil.which`` over the absolute entries of PATH only: an empty or relative entry
    (``PATH=/usr/bin:``) names the working folder, which may be a project the agent writes."""
    entries = [
        entry for entry in env.get("PATH", "").split(os.pathsep) if Path(entry).is_absolute()
    ]
    return shutil.which(program, path=os.pathsep.join(entries)) if entries else None


def notify_card_waiting(event: ApprovalEvent) -> None:
    """An approvals listener: on a new card, show the notification without waiting for it."""
    if not isinstance(event, CardOpened):
        return
    argv = notifier_argv(sys.platform, os.environ)
    if argv is None:
        return

    def run() -> None:
        # A missing or stuck notifier never affects the approval itself.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=False,
            )

    threading.Thread(target=run, daemon=True, name="notify").start()
