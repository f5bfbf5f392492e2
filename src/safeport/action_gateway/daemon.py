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
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from pathlib import Path

from safeport.action_gateway.agent_protocol import AgentHandler
from safeport.action_gateway.control import ControlHandler
from safeport.action_gateway.core import GatewayCore, GatewayParts, RuntimeLimits
from safeport.action_gateway.dedicated_account import prepare_account_folders
from safeport.action_gateway.process_hardening import harden_process, tainted_environment
from safeport.action_gateway.server import Connection, SocketServer
from safeport.errors import EnvironmentProblem
from safeport.shared.paths import SafeportPaths, check_socket_path, ensure_private_dir
from safeport.shared.provenance import verify_installed_package

log = logging.getLogger("safeport.gateway")


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
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_junk(pool: Executor) -> Callable[[Connection], Awaitable[None]]:
        # Agent junk is journaled on the agents' workers, never on the ones the human needs.
        async def journal(conn: Connection) -> None:
            body = {
                "counts": dict(conn.junk),
                "peer_pid": conn.peer.pid,
                "peer_exe": conn.peer.process.exe,
            }
            await loop.run_in_executor(
                pool, lambda: core.journals.actions.record("input.invalid", body)
            )

        return journal

    async def on_foreign_sender(
        conn: Connection, request_id: str | None, senders: list[int | None]
    ) -> None:
        body: dict[str, object] = {
            "request_id": request_id,
            "rung": 2,
            "code": "denied",
            "category": "sender",
            "reason": "a message on the requester's connection was written by another process",
            "requester": conn.peer.as_record(),
            "senders": senders,
        }
        await loop.run_in_executor(
            core.pool, lambda: core.journals.actions.record("action.denied", body)
        )

    agent_handler = AgentHandler(
        core.ladder, core.approvals, core.policies, core.vault, core.pool, core.agent_peers
    )
    control_handler = ControlHandler(core, stop.set)
    # Same-user mode: 0600 sockets in a 0700 folder. Dedicated mode: 0660 in a 0750 folder of
    # the account's group, whose members are the named humans; the gateway still admits by the
    # kernel-attested uid, so a member the install did not name is refused too.
    socket_mode = 0o660 if paths.install is not None else 0o600
    servers = [
        SocketServer(
            "agent",
            paths.agent_socket,
            agent_handler,
            probe=parts.probe,
            pool=core.identity_pool,
            limits=limits.server,
            max_connections=core.max_connections,
            on_refused=core.noise.add,
            on_junk=on_junk(core.pool),
            on_foreign_sender=on_foreign_sender,
            speaks_first=True,
            admitted_uids=core.admitted_uids,
            socket_mode=socket_mode,
        ),
        SocketServer(
            "control",
            paths.control_socket,
            control_handler,
            probe=parts.control_probe or parts.probe,
            pool=core.control_identity_pool,
            limits=limits.server,
            max_connections=core.control_max_connections,
            on_refused=core.noise.add,
            on_junk=on_junk(core.control_pool),
            make_room=True,
            first_message_timeout_s=limits.server.first_message_timeout_s,
            admitted_uids=core.admitted_uids,
            socket_mode=socket_mode,
        ),
    ]
    for server in servers:
        await server.start()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGHUP, lambda: _in_background(loop, core))
    # Before anything new is written (gateway.started included): a cut or rewritten journal,
    # or an intent left open by a kill, is judged on the files as they were found.
    core.inspect_at_start()
    core.record_session("gateway.started", {"pid": os.getpid(), "policy": core.policies.status()})
    log.info("gateway listening on %s and %s", paths.agent_socket, paths.control_socket)
    housekeeping = [
        (limits.reap_interval_s, core.reap),
        (limits.noise_interval_s, core.flush_noise),
        (limits.checkpoint_interval_s, core.checkpoint),
        (min(30.0, limits.reap_interval_s * 5), lambda: _auto_lock(core)),
    ]
    tasks = [
        asyncio.create_task(_every(interval, core.control_pool, job))
        for interval, job in housekeeping
    ]
    try:
        await stop.wait()
    finally:
        log.info("gateway stopping")
        for task in tasks:
            task.cancel()
        for server in servers:
            await server.close()
        core.approvals.void_all("gateway stopped")
        try:
            core.flush_noise()
        except Exception as exc:  # the stop goes on; only the last noise counts are lost
            log.warning("the refusal counts could not be journaled at stop: %s", type(exc).__name__)
        core.record_session("gateway.stopped", {"pid": os.getpid()})
        core.vault.lock("gateway stopped")
        try:
            parts.executor.close_all()
        except Exception as exc:  # the process exits next; its sockets close with it
            log.warning("closing pooled connections failed at stop: %s", type(exc).__name__)
        core.close()


async def _every(interval: float, pool: Executor, job: Callable[[], object]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(interval)
        try:
            await loop.run_in_executor(pool, job)
        except Exception as exc:  # the next period runs again; the type says what broke
            log.error("periodic gateway task %s failed: %s", _job_name(job), type(exc).__name__)


def _job_name(job: Callable[[], object]) -> str:
    return str(getattr(job, "__name__", type(job).__name__))


def _in_background(loop: asyncio.AbstractEventLoop, core: GatewayCore) -> None:
    loop.run_in_executor(core.control_pool, core.reload)


def _auto_lock(core: GatewayCore) -> None:
    if should_auto_lock(
        core.vault.unlocked, core.vault.idle_for(), core.settings().auto_lock_minutes
    ):
        core.vault.lock("idle")


def should_auto_lock(unlocked: bool, idle_s: float, auto_lock_minutes: int) -> bool:
    """Idle counts only human activity (passphrase proofs); 0 minutes means never."""
    return unlocked and auto_lock_minutes > 0 and idle_s > auto_lock_minutes * 60
