"""Who may be listening on the gateway's sockets, checked before a byte is sent to them.

`sp` (control.sock) and the context server (agent.sock) both connect to a path, and a path
says nothing about who bound it. In dedicated-account mode the answer is the kernel's: the
peer's uid must be the gateway account's, which no process of a human's uid can take, and the
folder holding the sockets must be one that only that account can create entries in. A
listener of any other uid (an agent that got a socket there, or a folder loosened by mistake)
gets nothing, and the refusal says why.
"""

from __future__ import annotations

import os
import socket
import stat

from safeport.errors import Denied, EnvironmentProblem
from safeport.shared.paths import SafeportPaths
from safeport.shared.peer_credentials import peer_uid


class ImpostorGateway(Denied):
    """The process behind the gateway's socket is not the gateway."""


def check_socket_folder(paths: SafeportPaths) -> None:
    """Dedicated mode: the run folder is the account's, and nobody else can add entries."""
    install = paths.install
    if install is None:
        return
    folder = install.run_dir
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        raise EnvironmentProblem(
            f"{folder} does not exist, so the gateway ({install.account}) is not running",
            hint="start it: `sudo systemctl start safeport-gateway`",
        ) from None
    except OSError as exc:
        raise EnvironmentProblem(f"cannot inspect {folder}: {exc.strerror}") from None
    problem = None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        problem = "is not a folder"
    elif st.st_uid != install.uid:
        problem = f"is owned by uid {st.st_uid}, not by the gateway account {install.account}"
    elif stat.S_IMODE(st.st_mode) & 0o022:
        problem = f"has mode {stat.S_IMODE(st.st_mode):04o}: others can put a socket there"
    if problem:
        raise ImpostorGateway(
            f"the gateway's socket folder {folder} {problem}; nothing was sent",
            hint="run `sp gateway install` again as root to repair it",
        )


def check_listener(sock: socket.socket, paths: SafeportPaths) -> None:
    """The peer of a connected gateway socket runs as the gateway's uid, or nothing is sent."""
    uid = peer_uid(sock)
    expected = paths.gateway_uid
    if uid == expected:
        return
    install = paths.install
    if install is not None:
        who = "your own user" if uid == os.geteuid() else f"uid {uid}"
        raise ImpostorGateway(
            f"{sock.getpeername() or 'the socket'} is served by {who}, not by the gateway "
            f"account {install.account} (uid {install.uid}); nothing was sent",
            hint="something is impersonating the gateway: stop it, and check "
            "`sudo systemctl status safeport-gateway`",
        )
    raise ImpostorGateway(
        f"the gateway's socket is served by uid {uid}, not by you; nothing was sent",
        hint="check who started it",
    )
