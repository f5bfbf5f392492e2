"""Who listens on control.sock, checked before `sp` sends it a passphrase or a value.

An agent running as the same user could stop the gateway and listen on control.sock itself,
waiting for the next `sp vault unlock` to hand it the passphrase. So before any secret leaves
`sp`, the peer behind the socket must be an `sp gateway run` of this same installation, running
as this user, not traced, and without LD_PRELOAD or PYTHON* in its environment.

The peer is identified by the gateway's own identity probe: the kernel's pid and uid for the
socket, a pidfd where the kernel gives one, the start time, and the environment read once. The
command line and the tracer are read after that, and the probe then confirms that the process
is still the one that connected (its pidfd has not exited, its start time and command line are
unchanged), so facts about a process that took the pid in between are never judged.

Reading another process's environment needs it to be dumpable; the real gateway is not (it
hardens itself), so where the environment cannot be read the check rests on the gateway's own
refusal to start with those variables (docs/security/limits.md says so). In dedicated mode none
of this runs: the uid checked at connect is the proof, since only root can take the account's
uid.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from safeport.action_gateway.identity.injection import GATEWAY_RUNTIMES, injecting_runtime
from safeport.action_gateway.identity.model import IdentityProbe, PeerIdentity
from safeport.action_gateway.identity.platform import default_probe
from safeport.errors import Denied
from safeport.shared.gateway_socket import ImpostorGateway
from safeport.shared.peer_credentials import peer_uid

_MAX_CMDLINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Installation:
    """What an `sp gateway run` of this installation looks like on its command line."""

    python: str
    sp_script: str | None

    @classmethod
    def current(cls) -> Installation:
        script = Path(sys.prefix) / "bin" / "sp"
        return cls(python=sys.executable, sp_script=str(script) if script.exists() else None)


@dataclass(frozen=True)
class ListenerFacts:
    """What is judged of the process behind control.sock."""

    argv: tuple[str, ...]
    tracer_pid: int  # 0: not traced
    injected: tuple[str, ...] | None  # code-injecting variables it has; None: unreadable


# Reads the facts of a resolved peer (the platform part).
FactReader = Callable[[PeerIdentity], ListenerFacts]


def check_gateway_listener(
    sock: socket.socket,
    *,
    probe: IdentityProbe | None = None,
    read_facts: FactReader | None = None,
    installation: Installation | None = None,
) -> None:
    """Raise :class:`ImpostorGateway` unless the peer of ``sock`` is this installation's
    `sp gateway run`, running as this user (same-user mode)."""
    if peer_uid(sock) != os.geteuid():
        raise ImpostorGateway("control.sock is served by another user; the passphrase was not sent")
    probe = probe or default_probe()
    try:
        identity = probe.resolve(sock)
    except Denied as exc:
        raise ImpostorGateway(
            "the process behind control.sock could not be inspected; the passphrase was not sent"
        ) from exc
    try:
        reader = read_facts or _platform_reader()
        try:
            facts = reader(identity)
        except OSError as exc:
            raise ImpostorGateway(
                "the process behind control.sock could not be inspected; "
                "the passphrase was not sent"
            ) from exc
        try:
            probe.verify(identity)
        except Denied as exc:
            raise ImpostorGateway(
                "the process behind control.sock changed while it was checked; "
                "the passphrase was not sent"
            ) from exc
    finally:
        probe.release(identity)
    judge_gateway_process(facts, installation or Installation.current())


def judge_gateway_process(facts: ListenerFacts, installation: Installation) -> None:
    """Raise :class:`ImpostorGateway` unless the facts describe this installation's gateway."""
    if not _is_sp_gateway_run(facts.argv, installation):
        raise ImpostorGateway(
            "the process behind control.sock is not `sp gateway run` of this installation; "
            "the passphrase was not sent",
            hint="stop it, start the gateway with `sp gateway run`, and retry",
        )
    if facts.tracer_pid != 0:
        raise ImpostorGateway("the gateway process is being traced; the passphrase was not sent")
    if facts.injected:
        raise ImpostorGateway(
            f"the gateway runs with {', '.join(facts.injected)} set; the passphrase was not sent",
            hint="restart it from a clean environment",
        )


def _gateway_injections(names: Iterable[str]) -> tuple[str, ...]:
    """The names that would inject code into a Python program started by the loader."""
    return tuple(sorted({name for name in names if injecting_runtime(name) in GATEWAY_RUNTIMES}))


def _is_sp_gateway_run(argv: Sequence[str], installation: Installation) -> bool:
    """`sp gateway run` as a shell starts it (`python …/bin/sp gateway run`, optionally with
    `-I`), or as safeport writes it (`python -I -m safeport gateway run`). A bare
    `python -m safeport` is refused: it imports from its working folder, so any folder holding
    a `safeport/` package could stand behind the socket with the genuine command line."""
    if not argv or not _same_python(argv[0], installation.python):
        return False
    rest = list(argv[1:])
    isolated = bool(rest) and rest[0] == "-I"
    if isolated:
        rest = rest[1:]
    script = installation.sp_script
    if len(rest) >= 3 and script is not None and rest[1:3] == ["gateway", "run"]:
        return _same_file(rest[0], script)
    return isolated and rest[:4] == ["-m", "safeport", "gateway", "run"]


def _same_python(candidate: str, python: str) -> bool:
    """The same interpreter of the same environment: `python` and `python3` in one venv's bin
    folder are the same, but two venvs (both links to one base interpreter) are not."""
    first, second = Path(candidate), Path(python)
    if not first.is_absolute():
        return False
    if os.path.normpath(first) == os.path.normpath(second):
        return True
    return os.path.normpath(first.parent) == os.path.normpath(second.parent) and _same_file(
        str(first), str(second)
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def _platform_reader() -> FactReader:
    if sys.platform == "darwin":  # pragma: no cover - exercised on macOS only
        return psutil_facts
    return _linux_facts


def _linux_facts(identity: PeerIdentity) -> ListenerFacts:
    """The command line and TracerPid from /proc (both readable for a non-dumpable process);
    the environment as the probe read it when it resolved the peer."""
    base = Path("/proc") / str(identity.pid)
    with open(base / "cmdline", "rb") as handle:
        raw = handle.read(_MAX_CMDLINE_BYTES)
    argv = tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)
    tracer = 0
    with open(base / "status", "rb") as handle:
        for line in handle:
            if line.startswith(b"TracerPid:"):
                tracer = int(line.split()[1])
                break
    process = identity.process
    if process.environ == "unreadable":
        return ListenerFacts(argv, tracer, None)  # non-dumpable: see the module docstring
    return ListenerFacts(argv, tracer, _gateway_injections(n for n, _ in process.injected_env))


def psutil_facts(identity: PeerIdentity) -> ListenerFacts:
    """The command line and environment through psutil (on macOS, KERN_PROCARGS2), where
    there is no /proc. Whether the process is traced shows on macOS only in its P_TRACED flag,
    which psutil does not expose, so the tracer is reported as none here."""
    import psutil

    try:
        process = psutil.Process(identity.pid)
        argv = tuple(process.cmdline())
    except psutil.Error as exc:
        raise OSError(type(exc).__name__) from exc
    try:
        injected: tuple[str, ...] | None = _gateway_injections(process.environ())
    except psutil.Error:
        injected = None
    return ListenerFacts(argv, 0, injected)
