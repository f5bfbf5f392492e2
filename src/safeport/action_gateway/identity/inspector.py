"""A separate process that reads who is asking, so the gateway itself holds no capability.

In dedicated-account mode the gateway must read other users' ``/proc/PID/exe``, ``environ`` and
scripts, which takes CAP_SYS_PTRACE (and CAP_DAC_READ_SEARCH for 0400 and 0700 files). With
CAP_SYS_PTRACE a process may also attach to, or write the memory of, any process on the
machine, root's included: code running inside the gateway (through a bug an upstream could
reach) would be root. So the gateway forks, before it has a socket, a thread or a secret, a
child that keeps the capabilities and does nothing but answer identity questions, and then
drops them from itself for good.

The child speaks over a SOCK_SEQPACKET pair: a request is one JSON object, with the connection
to identify passed as a descriptor (SCM_RIGHTS); an answer is one JSON object, with the peer's
pidfd passed back. It opens no socket and parses only these small messages. If it dies, every
identity fails closed.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from safeport.action_gateway.identity.capabilities import (
    CAP_DAC_READ_SEARCH,
    CAP_SYS_PTRACE,
    has_capability,
)
from safeport.action_gateway.identity.model import (
    IdentityChanged,
    IdentityProbe,
    IdentityUnavailable,
    PeerIdentity,
    ProcessInfo,
)
from safeport.errors import EnvironmentProblem
from safeport.shared.known_secrets import shorten
from safeport.shared.outside_json import loads_object

log = logging.getLogger("safeport.gateway")

MAX_MESSAGE = 256 * 1024  # a chain of 16 processes is a few KiB
MAX_ANSWER = 128 * 1024  # below the pair's send buffer, which is raised to hold MAX_MESSAGE
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4


def spawn_inspector(make_probe: Callable[[], IdentityProbe]) -> InspectorProbe:
    """One inspector (see :func:`spawn_inspectors`)."""
    return spawn_inspectors(make_probe, 1)[0]


def spawn_inspectors(make_probe: Callable[[], IdentityProbe], count: int) -> list[InspectorProbe]:
    """Fork ``count`` inspectors (which keep the capabilities), then drop them from this process.

    The gateway takes two: one for agent.sock and one for control.sock, so agents whose
    identities are slow to read never queue the human's `sp` behind them. Call it before any
    thread exists: a fork copies only the calling thread.
    """
    if not has_capability(CAP_SYS_PTRACE):
        raise EnvironmentProblem(
            "the gateway cannot inspect other users' processes (it lacks CAP_SYS_PTRACE), "
            "so it could not tell who is asking",
            hint="start it from the unit `sp gateway install` wrote, or with `setpriv "
            "--inh-caps +sys_ptrace,+dac_read_search --ambient-caps +sys_ptrace,+dac_read_search`",
        )
    children: list[tuple[socket.socket, int]] = []
    for _ in range(count):
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for end in (parent_end, child_end):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, MAX_MESSAGE * 2)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, MAX_MESSAGE * 2)
        pid = os.fork()
        if pid == 0:  # an inspector: it must never return into the gateway's code
            parent_end.close()
            for earlier, _pid in children:
                earlier.close()
            code = 0
            try:
                _harden_child()
                _serve(child_end, make_probe())
            except BaseException:
                code = 1
            os._exit(code)
        child_end.close()
        children.append((parent_end, pid))
    kept = drop_capabilities(keep_read_search=interpreter_needs_read_search())
    return [InspectorProbe(channel, pid, kept) for channel, pid in children]


def _harden_child() -> None:
    """Not dumpable (the gateway, same uid but without capabilities, cannot ptrace it anyway),
    and killed with the gateway so it never outlives the process it answers."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the gateway died before the line above took effect
        os._exit(1)


def interpreter_needs_read_search() -> bool:
    """Whether this interpreter's own files sit behind a folder others cannot enter (a pyenv
    build in /root, say): then the gateway keeps CAP_DAC_READ_SEARCH to import from it (a read
    capability, not one that can change another process), and says so in its status."""
    import sys

    for root in {Path(sys.base_prefix), Path(sys.prefix)}:
        for folder in [root, *root.parents]:
            try:
                if not folder.stat().st_mode & 0o001:
                    return True
            except OSError:
                return True
    return False


def drop_capabilities(*, keep_read_search: bool) -> tuple[str, ...]:
    """Clear the ambient set and every capability but, optionally, CAP_DAC_READ_SEARCH from the
    permitted and effective sets (no way back: NoNewPrivileges forbids file capabilities)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise EnvironmentProblem("could not clear the gateway's ambient capabilities")
    keep = 1 << CAP_DAC_READ_SEARCH if keep_read_search else 0

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)(Data(keep, keep, 0), Data(0, 0, 0))
    if libc.capset(ctypes.byref(header), data) != 0:
        raise EnvironmentProblem(
            f"could not drop the gateway's capabilities (errno {ctypes.get_errno()})"
        )
    if has_capability(CAP_SYS_PTRACE):
        raise EnvironmentProblem("the gateway still holds CAP_SYS_PTRACE after dropping it")
    return ("CAP_DAC_READ_SEARCH",) if keep_read_search else ()


class InspectorProbe:
    """:class:`IdentityProbe` answered by the inspector process; ``alive`` and ``release`` need
    no capability and are done here."""

    def __init__(self, channel: socket.socket, pid: int, kept: tuple[str, ...]) -> None:
        self._channel = channel
        self.pid = pid
        self.kept_capabilities = kept
        self._lock = threading.Lock()
        from safeport.action_gateway.identity.linux import LinuxProbe

        self._local = LinuxProbe()  # alive() and release() only: pidfd and /proc/PID/stat

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        answer, fds = self._ask({"op": "resolve"}, [sock.fileno()])
        pidfd = fds[0] if fds else None
        try:
            return _identity(answer["identity"], pidfd)
        except (KeyError, TypeError, ValueError) as exc:
            if pidfd is not None:
                os.close(pidfd)
            raise IdentityUnavailable("the inspector's answer was malformed") from exc

    def verify(self, identity: PeerIdentity) -> None:
        if not self._local.alive(identity):
            raise IdentityChanged("the requesting process has exited")
        answer, _ = self._ask({"op": "fingerprint", "pid": identity.pid}, [])
        if _fingerprint(answer.get("fingerprint")) != identity.fingerprint:
            raise IdentityChanged("the requesting process is not the one that connected")

    def alive(self, identity: PeerIdentity) -> bool:
        return self._local.alive(identity)

    def release(self, identity: PeerIdentity) -> None:
        self._local.release(identity)

    def _ask(self, request: dict[str, Any], fds: list[int]) -> tuple[dict[str, Any], list[int]]:
        with self._lock:
            try:
                _send(self._channel, request, fds)
                answer, received = _receive(self._channel)
            except (OSError, ValueError) as exc:
                log.error(
                    "the identity inspector is gone (%s); stopping so the service restarts the "
                    "gateway whole",
                    type(exc).__name__,
                )
                os.kill(os.getpid(), signal.SIGTERM)
                raise IdentityUnavailable("the gateway cannot identify peers right now") from None
        if answer.get("ok"):
            return answer, received
        for fd in received:
            os.close(fd)
        message = shorten(str(answer.get("message", "the peer could not be identified")), 300)
        if answer.get("kind") == "changed":
            raise IdentityChanged(message)
        raise IdentityUnavailable(message)


def _serve(channel: socket.socket, probe: IdentityProbe) -> None:
    while True:
        try:
            request, fds = _receive(channel, from_gateway=True)
        except (OSError, ValueError):  # JsonRefused is a ValueError
            return  # the gateway closed its end (or is gone): nothing left to serve
        back: list[int] = []
        try:
            answer, back = _answer(probe, request, fds)
            data = _encode(answer)
            if len(data) > MAX_ANSWER:
                # A requester can make its own description huge (long names, a rewritten
                # argv, variables): refuse to vouch for it rather than fail to say anything.
                data = _encode(_refusal("unavailable", "the peer's process is too large to read"))
                for fd in back:
                    os.close(fd)
                back = []
        except Exception as exc:  # one request must never end the inspector
            log.warning("the inspector could not answer a request: %s", type(exc).__name__)
            data = _encode(_refusal("unavailable", "the peer process could not be inspected"))
        for fd in fds:
            os.close(fd)
        try:
            _send_bytes(channel, data, back)
        except OSError:
            with contextlib.suppress(OSError):
                _send_bytes(channel, _encode(_refusal("unavailable", "no answer fits")), [])
        finally:
            for fd in back:
                os.close(fd)


def _answer(
    probe: IdentityProbe, request: dict[str, Any], fds: list[int]
) -> tuple[dict[str, Any], list[int]]:
    from safeport.action_gateway.identity.procfs import fingerprint as read_fingerprint

    try:
        if request.get("op") == "resolve" and len(fds) == 1:
            with socket.socket(fileno=fds.pop()) as peer_sock:
                identity = probe.resolve(peer_sock)
            back = [identity.pidfd] if identity.pidfd is not None else []
            return {"ok": True, "identity": _identity_json(identity)}, back
        if request.get("op") == "fingerprint" and isinstance(request.get("pid"), int):
            return {"ok": True, "fingerprint": list(read_fingerprint(request["pid"]))}, []
        return _refusal("unavailable", "unknown request"), []
    except IdentityChanged as exc:
        return _refusal("changed", exc.message), []
    except IdentityUnavailable as exc:
        return _refusal("unavailable", exc.message), []
    except OSError:
        return _refusal("changed", "the requesting process has exited"), []


def _refusal(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message}


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8")


def _send(channel: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
    _send_bytes(channel, _encode(message), fds)


def _send_bytes(channel: socket.socket, data: bytes, fds: list[int]) -> None:
    ancillary = (
        [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
    )
    channel.sendmsg([data], ancillary)


def _receive(
    channel: socket.socket, *, from_gateway: bool = False
) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data, ancillary, flags, _ = channel.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    received = list(fds)
    if not data:
        for fd in received:
            os.close(fd)
        raise ValueError("closed")
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in received:
            os.close(fd)
        raise ValueError("truncated")
    if from_gateway:
        # The inspector holds the capabilities the gateway gave up: what the gateway sends it
        # (two small requests) is read by the strict decoder, so a gateway running hostile code
        # cannot crash it with a nesting deeper than its stack; it stops as on any bad request.
        # Answers come the other way from the inspector's own json.dumps, and may hold a
        # non-UTF-8 file name as escaped lone surrogates, which the strict decoder refuses.
        message: Any = loads_object(data, max_bytes=MAX_MESSAGE)
    else:
        message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("not an object")
    return message, received


def _identity_json(identity: PeerIdentity) -> dict[str, Any]:
    return {
        "uid": identity.uid,
        "gid": identity.gid,
        "chain": [asdict(proc) for proc in identity.chain],
        "fingerprint": list(identity.fingerprint),
    }


_PROCESS_FIELDS = {field.name for field in fields(ProcessInfo)}


def _identity(data: dict[str, Any], pidfd: int | None) -> PeerIdentity:
    chain = []
    for raw in data["chain"]:
        if not isinstance(raw, dict) or set(raw) - _PROCESS_FIELDS:
            raise ValueError("chain entry")
        entry = dict(raw)
        entry["injected_env"] = tuple(tuple(pair) for pair in entry.get("injected_env", ()))
        chain.append(ProcessInfo(**entry))
    if not chain:
        raise ValueError("empty chain")
    return PeerIdentity(
        uid=int(data["uid"]),
        gid=int(data["gid"]),
        chain=tuple(chain),
        pidfd=pidfd,
        fingerprint=_fingerprint(data["fingerprint"]),
    )


def _fingerprint(raw: object) -> tuple[object, ...]:
    """The JSON form back to the tuple ``linux_proc.fingerprint`` builds."""
    if not isinstance(raw, list) or len(raw) != 3:
        raise IdentityUnavailable("the inspector's answer was malformed")
    start, exe_key, cmdline = raw
    return (start, tuple(exe_key) if isinstance(exe_key, list) else exe_key, cmdline)
