"""Peer identity on macOS: LOCAL_PEERPID, psutil, and `codesign` for signatures.

The kernel gives the peer's pid (LOCAL_PEERPID) and uid (getpeereid); psutil gives the parent
chain, start times and executables; ``codesign --verify`` and ``codesign -dvvv`` give the
signature status, the signing authority and the team id. Parsing ``codesign`` output is pure
(:func:`parse_codesign`) and tested with recorded outputs.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psutil

from safeport.action_gateway.identity.argv import launch_role
from safeport.action_gateway.identity.digests import DigestCache
from safeport.action_gateway.identity.model import (
    IdentityChanged,
    IdentityUnavailable,
    PeerIdentity,
    ProcessInfo,
    SignatureStatus,
    check_unchanged,
    is_interpreter,
    walk_chain,
)

LOCAL_PEERPID = 0x002  # <sys/un.h>
SOL_LOCAL = 0
_AUTHORITY = re.compile(r"^Authority=(.+)$", re.MULTILINE)
_TEAM = re.compile(r"^TeamIdentifier=(.+)$", re.MULTILINE)
_CDHASH = re.compile(r"^CDHash=([0-9a-f]+)$", re.MULTILINE)


@dataclass(frozen=True)
class CodeSignature:
    status: SignatureStatus
    authority: str | None = None
    team_id: str | None = None
    cdhash: str | None = None


def parse_codesign(verify_returncode: int, verify_stderr: str, details: str) -> CodeSignature:
    """Turn `codesign --verify` and `codesign -dvvv` output into a :class:`CodeSignature`."""
    if "code object is not signed at all" in verify_stderr or "not signed" in details:
        return CodeSignature("unsigned")
    if verify_returncode != 0:
        return CodeSignature("invalid")
    authorities = _AUTHORITY.findall(details)
    team = _TEAM.search(details)
    cdhash = _CDHASH.search(details)
    team_id = team.group(1).strip() if team else None
    if team_id == "not set":
        team_id = None
    return CodeSignature(
        "valid",
        authority=authorities[0].strip() if authorities else None,
        team_id=team_id,
        cdhash=cdhash.group(1) if cdhash else None,
    )


def codesign(path: str) -> CodeSignature:  # pragma: no cover - macOS only
    verify = subprocess.run(
        ["/usr/bin/codesign", "--verify", "--strict", path],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    details = subprocess.run(
        ["/usr/bin/codesign", "-dvvv", path],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return parse_codesign(verify.returncode, verify.stderr, details.stderr + details.stdout)


class MacProbe:  # pragma: no cover - exercised on macOS only
    def __init__(self) -> None:
        self.cache = DigestCache()
        self._signatures: dict[tuple[str, str | None], CodeSignature] = {}

    def resolve(self, sock: socket.socket) -> PeerIdentity:
        pid = struct.unpack("i", sock.getsockopt(SOL_LOCAL, LOCAL_PEERPID, 4))[0]
        try:
            proc = psutil.Process(pid)
            uids = proc.uids()
            chain = self._chain(proc)
            fingerprint = (proc.create_time(), proc.exe())
        except psutil.Error as exc:
            raise IdentityUnavailable("the peer process could not be inspected") from exc
        return PeerIdentity(
            uid=uids.effective, gid=proc.gids().effective, chain=chain, fingerprint=fingerprint
        )

    def verify(self, identity: PeerIdentity) -> None:
        try:
            proc = psutil.Process(identity.pid)
            now: tuple[object, ...] | None = (proc.create_time(), proc.exe())
        except psutil.Error:
            now = None
        check_unchanged(identity, now)

    def alive(self, identity: PeerIdentity) -> bool:
        try:
            self.verify(identity)
        except IdentityChanged:
            return False
        return True

    def release(self, identity: PeerIdentity) -> None:
        return None

    def _chain(self, proc: psutil.Process) -> tuple[ProcessInfo, ...]:
        # Parents as psutil hands them over: parent() checks the parent started before its
        # child, so a parent pid that exited and was reused is not taken for it.
        held = {proc.pid: proc}

        def read(pid: int, first: bool) -> tuple[ProcessInfo, int]:
            current = held.pop(pid)
            parent = current.parent() if pid > 1 else None
            if parent is not None:
                held[parent.pid] = parent
            return self._process(current), parent.pid if parent is not None else 0

        return walk_chain(proc.pid, read)

    def _process(self, current: psutil.Process) -> ProcessInfo:
        exe = current.exe()
        digest = self.cache.digest_path(exe)
        signature = self._signatures.get((exe, digest))
        if signature is None:
            signature = codesign(exe)
            self._signatures[(exe, digest)] = signature
        name = Path(exe).name
        # Only an interpreter's command line says anything more (and another user's may not be
        # readable: asking for it of every process would fail chains that work today).
        role = launch_role(name, current.cmdline() if is_interpreter(name) else [])
        return ProcessInfo(
            pid=current.pid,
            start_time=int(current.create_time() * 1000),
            uid=current.uids().real,
            name=name,
            exe=exe,
            exe_sha256=digest,
            signature=signature.status,
            team_id=signature.team_id,
            authority=signature.authority,
            interpreter=role.interpreter,
            launcher=role.launcher,
            script=role.script,
        )
