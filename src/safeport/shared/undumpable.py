"""Closing a process to other processes of the same user: no core files, not dumpable.

A non-dumpable process cannot be ptraced, and its ``/proc/PID/mem``, ``environ`` and ``exe``
cannot be read, by another process of its uid that lacks ``CAP_SYS_PTRACE``; where Yama's
``ptrace_scope`` is 0 that is the only thing keeping a same-uid process out. Both processes use
it: the gateway for its keys, the context server for the session grants the gateway binds to
its identity (see ``context_server/server.py`` for when).
"""

from __future__ import annotations

import resource
import sys

from safeport.errors import EnvironmentProblem

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def make_undumpable() -> None:
    """No core files, and not dumpable; raises if the kernel refuses."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise EnvironmentProblem("could not make the process non-dumpable (prctl failed)")


def is_dumpable() -> bool:
    """Whether this process can still be ptraced by its own uid (Linux; elsewhere False)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0))
