"""Where safeport runs: Linux, and the refusal each entry point gives anywhere else.

The gateway's answer to "who is asking" comes from the Linux kernel: the peer's pid and uid from
``SO_PEERCRED``, the sender of each message from ``SCM_CREDENTIALS``, the process chain and the
running binaries from ``/proc``, and a pidfd that keeps naming the requester
(``SO_PEERPIDFD``). Elsewhere there is no equivalent behind these checks that the suite runs,
so ``sp`` and the context server stop before they read or write anything rather than run with
a weaker identity. The seam a port would fill is listed in docs/architecture.md ("Platforms").

This module imports nothing but ``sys``, so an entry point can ask it first, before a module
that needs Linux is imported.
"""

from __future__ import annotations

import json
import sys

# 2: "refused by its environment" (docs/reference/cli.md, Exit codes).
UNSUPPORTED_PLATFORM_EXIT = 2


def unsupported_platform_reason(platform: str | None = None) -> str | None:
    """The one-line refusal for ``platform`` (``sys.platform`` by default), or None on Linux."""
    platform = sys.platform if platform is None else platform
    if platform == "linux":
        return None
    return (
        f"safeport runs on Linux only and this is {platform}: it needs the kernel's peer "
        "credentials (SO_PEERCRED), /proc and pidfds to tell which process is asking"
    )


def refuse_unsupported_platform(program: str, *, json_reply: bool = False) -> None:
    """Exit with the refusal on stderr on any platform but Linux; on Linux, return.

    With ``json_reply`` (a command run with ``--json``) the refusal is also the JSON reply
    every failing command prints, so a script reads it the way it reads any other failure."""
    reason = unsupported_platform_reason()
    if reason is not None:
        sys.stderr.write(f"{program}: {reason}\n")
        if json_reply:
            reply = {"error": reason, "exit_code": UNSUPPORTED_PLATFORM_EXIT}
            sys.stdout.write(json.dumps(reply, sort_keys=True) + "\n")
        raise SystemExit(UNSUPPORTED_PLATFORM_EXIT)
