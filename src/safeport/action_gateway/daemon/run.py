"""`sp gateway run`: start checks, hardening, the event loop, signals and a clean stop.

Before a socket exists: the environment must not carry LD_PRELOAD or PYTHON* variables (they
would let anything run inside the process that holds the keys, and `sp` refuses to send a
passphrase to such a process), the process becomes non-dumpable with core files off, the run
folder must be private, and no other gateway may hold the instance lock.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from pathlib import Path

from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.core.parts import GatewayParts, RuntimeLimits, WorkerPools
from safeport.action_gateway.daemon.hardening import harden_process, tainted_environment
from safeport.action_gateway.handlers.agent_sock import AgentHandler
from safeport.action_gateway.handlers.control_sock import ControlHandler
from safeport.action_gateway.install.start_checks import prepare_account_folders
from safeport.action_gateway.ladder.refusal import Refusal, Rung, refusal_record
from safeport.action_gateway.sockets.connection import Connection
from safeport.action_gateway.sockets.server import SocketServer
from safeport.errors import EnvironmentProblem
from safeport.shared.exception_summary import summarize
from safeport.shared.paths import SafeportPaths, check_socket_path, ensure_private_dir
from safeport.shared.provenance import verify_installed_package
from safeport.shared.schemas.results import PolicyState

log = logging.getLogger("safeport.gateway")


def configure_logging(log_path: Path) -> None:
    """Log to stderr and to ``log_path`` (created 0600; a link planted there is refused)."""
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    handlers: list[logging.Handler] = [
        logging.StreamHandler(sys.stderr),
        logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8")),
    ]
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers
    )


def instance_lock(run_dir: Path) -> int:
    """Hold an exclusive lock for the life of the gateway; a second instance is refused."""
    fd = os.open(
        run_dir / "gateway.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise EnvironmentProblem(
            "another gateway is already running for this folder", hint="see `sp gateway status`"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def prepare(paths: SafeportPaths, env: Mapping[str, str]) -> int:
    """Every start check; returns the instance lock's fd."""
    tainted = tainted_environment(env)
    if tainted:
        raise EnvironmentProblem(
            f"refusing to start with {', '.join(tainted)} set",
            hint="unset them; they would let other code run inside the gateway",
        )
    harden_process()
    if paths.install is not None:
        prepare_account_folders(paths)
    else:
        ensure_private_dir(paths.run_dir)
        ensure_private_dir(paths.audit_dir)
        ensure_private_dir(paths.data_dir)
    check_socket_path(paths.agent_socket)
    check_socket_path(paths.control_socket)
    return instance_lock(paths.run_dir)


def run_gateway(
    paths: SafeportPaths, parts: GatewayParts, limits: RuntimeLimits | None = None
) -> None:
    """Run until SIGTERM/SIGINT or `sp gateway stop`."""
    verify_installed_package()
    # Every path the gateway uses is absolute; a working folder left in a project the agent
    # writes would be where anything resolved relatively (a program, a file) is looked up.
    os.chdir("/")
    lock_fd = prepare(paths, os.environ)
    try:
        asyncio.run(_serve(paths, parts, limits or RuntimeLimits()))
    finally:
        os.close(lock_fd)


async def _serve(paths: SafeportPaths, parts: GatewayParts, limits: RuntimeLimits) -> None:
    core = GatewayCore(paths, parts, limits)
    pools = WorkerPools.sized(limits)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    servers = _socket_servers(paths, parts, limits, core, pools, stop)
    for server in servers:
        await server.start()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGHUP, lambda: _in_background(loop, pools.control, core))
    # Before anything new is written (gateway.started included): a cut or rewritten journal,
    # or an intent left open by a kill, is judged on the files as they were found.
    core.inspect_at_start()
    core.record_session(
        "gateway.started", {"pid": os.getpid(), "policy": core.policy_status().model_dump()}
    )
    log.info("gateway listening on %s and %s", paths.agent_socket, paths.control_socket)
    tasks = _housekeeping(limits, core, pools.control)
    try:
        await stop.wait()
    finally:
        log.info("gateway stopping")
        for task in tasks:
            task.cancel()
        for server in servers:
            await server.close()
        try:
            core.stop()
        finally:
            pools.shutdown()
            core.remote.close()
            core.close()


def _socket_servers(
    paths: SafeportPaths,
    parts: GatewayParts,
    limits: RuntimeLimits,
    core: GatewayCore,
    pools: WorkerPools,
    stop: asyncio.Event,
) -> list[SocketServer]:
    """agent.sock and control.sock, each with its own workers, budget and junk journal."""
    loop = asyncio.get_running_loop()
    # Same-user mode: 0600 sockets in a 0700 folder. Dedicated mode: 0660 in a 0750 folder of
    # the account's group, whose members are the named humans; the gateway still admits by the
    # kernel-attested uid, so a member the install did not name is refused too.
    socket_mode = 0o660 if paths.install is not None else 0o600
    return [
        SocketServer(
            "agent",
            paths.agent_socket,
            AgentHandler(core, pools.agents),
            probe=parts.probe,
            pool=pools.agent_identity,
            limits=limits.server,
            max_connections=core.max_connections,
            on_refused=core.count_refusal,
            on_junk=_junk_journal(loop, core, pools.agents),
            on_foreign_sender=_foreign_sender_journal(loop, core, pools.agents),
            speaks_first=True,
            admitted_uids=core.admitted_uids,
            socket_mode=socket_mode,
        ),
        SocketServer(
            "control",
            paths.control_socket,
            ControlHandler(core, pools.control, stop.set),
            probe=parts.control_probe or parts.probe,
            pool=pools.control_identity,
            limits=limits.server,
            max_connections=core.control_max_connections,
            on_refused=core.count_refusal,
            on_junk=_junk_journal(loop, core, pools.control),
            make_room=True,
            first_message_timeout_s=limits.server.first_message_timeout_s,
            admitted_uids=core.admitted_uids,
            socket_mode=socket_mode,
        ),
    ]


def _junk_journal(
    loop: asyncio.AbstractEventLoop, core: GatewayCore, pool: Executor
) -> Callable[[Connection], Awaitable[None]]:
    """A closed connection's junk counts, journaled on ``pool``: agent junk on the agents'
    workers, never on the ones the human needs, and within the uid's budget of whole records
    (past it, counted)."""

    async def journal(conn: Connection) -> None:
        body = {
            "counts": dict(conn.junk),
            "peer_pid": conn.peer.pid,
            "peer_exe": conn.peer.process.exe,
        }
        uid = conn.peer.uid
        await loop.run_in_executor(
            pool, lambda: core.record_refused(uid, "input_invalid", "input.invalid", body)
        )

    return journal


def _foreign_sender_journal(
    loop: asyncio.AbstractEventLoop, core: GatewayCore, pool: Executor
) -> Callable[[Connection, str | None, list[int | None]], Awaitable[None]]:
    """A frame on a requester's connection that another process wrote: journaled as a refusal
    at the identity rung, on the agents' workers."""

    async def journal(conn: Connection, request_id: str | None, senders: list[int | None]) -> None:
        refusal = Refusal(
            "denied",
            Rung.IDENTITY,
            "sender",
            "a message on the requester's connection was written by another process",
        )
        body = refusal_record(request_id, refusal, conn.peer)
        body["senders"] = senders
        uid = conn.peer.uid
        await loop.run_in_executor(
            pool, lambda: core.record_refused(uid, "sender", "action.denied", body)
        )

    return journal


def _housekeeping(
    limits: RuntimeLimits, core: GatewayCore, pool: Executor
) -> list[asyncio.Task[None]]:
    """The periodic jobs (reaping sessions, flushing refusal counts, checkpoints, auto-lock),
    each on ``pool`` at its own interval until cancelled."""
    housekeeping = [
        (limits.reap_interval_s, core.reap),
        (limits.noise_interval_s, core.flush_noise),
        (limits.checkpoint_interval_s, core.checkpoint),
        (min(30.0, limits.reap_interval_s * 5), core.lock_if_idle),
    ]
    return [asyncio.create_task(_every(interval, pool, job)) for interval, job in housekeeping]


async def _every(interval: float, pool: Executor, job: Callable[[], object]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(interval)
        try:
            await loop.run_in_executor(pool, job)
        except Exception as exc:  # the next period runs again; the type says what broke
            log.error("periodic gateway task %s failed: %s", _job_name(job), summarize(exc))


def _job_name(job: Callable[[], object]) -> str:
    return str(getattr(job, "__name__", type(job).__name__))


def _in_background(loop: asyncio.AbstractEventLoop, pool: Executor, core: GatewayCore) -> None:
    """SIGHUP: reload off the loop; a failure is logged, never left for asyncio to print."""
    future = loop.run_in_executor(pool, core.reload)

    def report(done: asyncio.Future[PolicyState]) -> None:
        exc = None if done.cancelled() else done.exception()
        if exc is not None:
            log.error("reload on SIGHUP failed: %s", summarize(exc))

    future.add_done_callback(report)
