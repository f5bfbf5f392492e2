"""Who is on the other end of a socket (DESIGN.md §7), as plain values.

A :class:`PeerIdentity` is taken once when a connection is accepted: the peer's uid and pid from
the kernel, then the process chain up to 16 hops with start times, executables and their digests.
Before every request the gateway asks :class:`IdentityProbe.verify` whether the peer is still that
same process: a pid that exited and was reused, or a process that exec'd another program, is no
longer the peer that connected, and nothing it asks for is served.

The platform parts (reading ``/proc``, running ``codesign``) live in ``identity_linux`` and
``identity_macos``; this module holds the values and the rules that do not touch the system.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Literal, Protocol

from safeport.errors import Denied

MAX_CHAIN = 16

SignatureStatus = Literal["valid", "unsigned", "invalid", "unsupported"]

# Programs whose code signature (or digest) names a runtime, not the code it runs; the script is
# what matters, so cards show it. They are also skipped when finding a requester's *client*
# (DESIGN.md §8): `npx` running `node` running the context server belongs to the client above.
_INTERPRETERS = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|ruby[0-9.]*|perl[0-9.]*|php[0-9.]*|"
    r"sh|bash|dash|zsh|ksh|fish|tcsh|csh|busybox)$"
)
_LAUNCHERS = re.compile(
    r"^(env|uv|uvx|npx|npm|pnpm|yarn|pipx|poetry|hatch|pdm|nohup|setsid|timeout|sudo|doas|"
    r"runuser|setpriv|su|nice|ionice|stdbuf|time|script|tini|dumb-init)$"
)


class IdentityChanged(Denied):
    """The peer is no longer the process that connected (exited, exec'd, or its pid reused)."""


class IdentityUnavailable(Denied):
    """The peer's identity could not be read (it exited at once, or /proc hides it)."""


@dataclass(frozen=True)
class ProcessInfo:
    """One process in a peer's chain."""

    pid: int
    start_time: int  # kernel ticks since boot on Linux; stable for the life of the process
    uid: int
    name: str
    exe: str
    exe_sha256: str | None
    signature: SignatureStatus = "unsupported"
    team_id: str | None = None
    authority: str | None = None
    interpreter: bool = False
    launcher: bool = False
    script: str | None = None
    script_sha256: str | None = None

    @property
    def instance(self) -> tuple[int, int]:
        """(pid, start time): what tells this process apart from a later one with its pid."""
        return (self.pid, self.start_time)

    def as_record(self) -> dict[str, object]:
        """The journal/card form: identities and digests, never arguments or environment."""
        record: dict[str, object] = {
            "pid": self.pid,
            "start": self.start_time,
            "uid": self.uid,
            "exe": self.exe,
            "sha256": self.exe_sha256,
            "signature": self.signature,
        }
        if self.team_id:
            record["team_id"] = self.team_id
        if self.interpreter:
            record["interpreter"] = True
            record["script"] = self.script
            record["script_sha256"] = self.script_sha256
        return record


@dataclass(frozen=True)
class PeerIdentity:
    """The peer of one connection, as resolved when it was accepted."""

    uid: int
    gid: int
    chain: tuple[ProcessInfo, ...]  # chain[0] is the peer itself, then its parents
    pidfd: int | None = None  # a pidfd held for the connection's life, where the kernel gives one
    fingerprint: tuple[object, ...] = ()  # what ``verify`` compares (exe inode, cmdline digest)

    @property
    def process(self) -> ProcessInfo:
        return self.chain[0]

    @property
    def pid(self) -> int:
        return self.chain[0].pid

    @property
    def instance(self) -> tuple[int, int, str]:
        """Requester instance for grants: pid, start time and executable digest (§8)."""
        head = self.chain[0]
        return (head.pid, head.start_time, head.exe_sha256 or "")

    def client(self) -> ProcessInfo | None:
        """The nearest ancestor that is not an interpreter, shell or launcher (DESIGN.md §8)."""
        for proc in self.chain[1:]:
            if not (proc.interpreter or proc.launcher):
                return proc
        return None

    def as_record(self) -> dict[str, object]:
        return {"uid": self.uid, "chain": [proc.as_record() for proc in self.chain]}


def is_interpreter(name: str) -> bool:
    return bool(_INTERPRETERS.match(name))


def is_launcher(name: str) -> bool:
    return bool(_LAUNCHERS.match(name))


def descends_from(descendant: PeerIdentity, ancestor: ProcessInfo) -> bool:
    """Whether ``ancestor`` (that exact instance) is ``descendant`` or one of its parents."""
    return any(proc.instance == ancestor.instance for proc in descendant.chain)


class IdentityProbe(Protocol):
    """Reads identities from the system; one implementation per platform."""

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        """Identify the peer of a freshly accepted connection."""
        ...

    def verify(self, identity: PeerIdentity) -> None:
        """Raise :class:`IdentityChanged` unless the peer is still the same process."""
        ...

    def alive(self, identity: PeerIdentity) -> bool:
        """Whether the process instance still exists (for reaping session grants)."""
        ...

    def release(self, identity: PeerIdentity) -> None:
        """Close what :meth:`resolve` holds open (the pidfd)."""
        ...


def default_probe() -> IdentityProbe:
    """The probe for this platform."""
    if os.uname().sysname == "Darwin":  # pragma: no cover - exercised on macOS only
        from safeport.action_gateway.identity_macos import MacProbe

        return MacProbe()
    from safeport.action_gateway.identity_linux import LinuxProbe

    return LinuxProbe()
