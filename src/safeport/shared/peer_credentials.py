"""The uid the kernel attests for the other end of a connected Unix socket.

Both sides use it before anything else crosses a socket in dedicated-account mode: the
gateway refuses a uid it does not serve before it spends any work identifying the process, and
`sp` and the context server refuse a listener that is not the gateway's account before they
send a single byte. The uid is the one the peer had when it called connect() or listen(); no
process can choose it.
"""

from __future__ import annotations

import socket
import struct
import sys

from safeport.errors import EnvironmentProblem

_UCRED = struct.Struct("3i")  # Linux struct ucred: pid, uid, gid
_XUCRED_HEAD = struct.Struct("=II")  # macOS struct xucred: cr_version, cr_uid, ...
_XUCRED_SIZE = 76  # cr_version, cr_uid, cr_ngroups (+ padding), cr_groups[16]
SOL_LOCAL = 0
LOCAL_PEERCRED = 0x001


def peer_uid(sock: socket.socket) -> int:
    """The peer's uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS and the BSDs)."""
    try:
        if sys.platform.startswith("linux"):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
            return int(_UCRED.unpack(raw)[1])
        raw = sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, _XUCRED_SIZE)  # pragma: no cover
        return int(_XUCRED_HEAD.unpack_from(raw)[1])  # pragma: no cover
    except OSError as exc:
        raise EnvironmentProblem(
            f"the kernel did not say who is at the other end of the socket ({exc.strerror})"
        ) from None
