"""Assemble the context server (reader or agent profile) and run it over stdio.

stdout carries JSON-RPC and nothing else: logging goes to stderr, and the only files written are
the search index (cache folder) and the reads journal (audit folder).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer

from safeport import __version__
from safeport.context_server.http.app import RemoteRoot, RemoteService, build_app
from safeport.context_server.http.endpoint import HttpEndpoint
from safeport.context_server.http.gateway_oauth import OAuthGateway
from safeport.context_server.http.pages import APPROVAL_PATH
from safeport.context_server.http.root_ids import root_id, shown_directory
from safeport.context_server.http.tenants import TenantServer
from safeport.context_server.index.change_feed import ChangeFeed
from safeport.context_server.index.search_index import Progress, SearchIndex, index_path
from safeport.context_server.operations.allow_back import (
    AllowedValue,
    values_on_line,
    values_with_fingerprint,
)
from safeport.context_server.operations.reads_journal import ReadsJournal
from safeport.context_server.operations.secret_report import (
    ScanProgress,
    ScanReport,
    scan_workspace,
)
from safeport.context_server.operations.service import WorkspaceService
from safeport.context_server.policy.display_names import display_name
from safeport.context_server.sdk_seam import lowlevel_server
from safeport.context_server.tools.agent_tools import HELD, register_agent_tools
from safeport.context_server.tools.guidance import (
    AGENT_INSTRUCTIONS,
    INSTRUCTIONS,
    add_prompts,
    add_resources,
)
from safeport.context_server.tools.held_proposals import request_state_security
from safeport.context_server.tools.journaled_calls import JournaledServer, without_client_roots
from safeport.context_server.tools.reader_tools import register_reader_tools
from safeport.context_server.transport.fast_path import DirectCalls
from safeport.context_server.transport.stdio import serve_stdio
from safeport.context_server.workspace.allow_list import add_allowed
from safeport.context_server.workspace.gate import Workspace
from safeport.context_server.workspace.serving_config import (
    content_secrets,
    load_settings,
    read_policy,
    served_roots,
)
from safeport.errors import EnvironmentProblem, Error
from safeport.shared.paths import SafeportPaths, locate
from safeport.shared.provenance import verify_installed_package, verify_outside_served_roots
from safeport.shared.undumpable import make_undumpable

log = logging.getLogger(__name__)

Profile = Literal["reader", "agent"]


@dataclass(frozen=True)
class ServeOptions:
    roots: Sequence[str] = ()
    profile: Profile = "reader"
    origin: str = "unknown"


# Seam for other profiles: a profile maps to the functions that add its tools; one may return
# a task to run beside the session (the agent profile's watch on the gateway).
Background = Callable[[], Coroutine[Any, Any, None]]
ToolRegistrar = Callable[[MCPServer[Any], WorkspaceService], Background | None]
PROFILES: dict[str, tuple[ToolRegistrar, ...]] = {
    "reader": (register_reader_tools,),
    "agent": (register_reader_tools, register_agent_tools),
}


def open_workspace(
    roots: Sequence[str], paths: SafeportPaths | None = None, *, create_key: bool = False
) -> Workspace:
    """The served roots behind the effective read policy (raises a clear error without a root);
    ``create_key`` makes the fingerprint key if there is none yet."""
    paths = paths or locate()
    settings = load_settings(paths.context_config)
    served = served_roots(roots, settings)
    verify_outside_served_roots([root.path for root in served])
    secrets = content_secrets(settings, paths, served, create_key=create_key)
    return Workspace(served, read_policy(settings, paths), secrets)


def build_index(roots: Sequence[str], progress: Progress | None = None) -> tuple[int, float]:
    """Build or refresh the search index ahead of serving; returns (files, seconds)."""
    paths = locate()
    workspace = open_workspace(roots, paths)
    try:
        stats = SearchIndex(index_path(paths.cache_dir, workspace), workspace).refresh(progress)
    except Error:
        raise
    except Exception as exc:
        # One sentence, no traceback and no OS text (it could carry a path).
        raise EnvironmentProblem(
            f"the index could not be built ({type(exc).__name__})",
            hint="run `sp context index` again; if it keeps failing, remove the index file "
            "under the cache folder",
        ) from None
    finally:
        workspace.close()
    return stats.files, stats.seconds


def scan_roots(roots: Sequence[str], progress: ScanProgress | None = None) -> ScanReport:
    """What the server would withhold from the roots and what its policy refuses (`sp context
    scan`); makes the fingerprint key on first use, so each finding that may be allowed back
    comes with its fingerprint."""
    paths = locate()
    workspace = open_workspace(roots, paths, create_key=True)
    try:
        return scan_workspace(workspace, progress)
    finally:
        workspace.close()


def allow_secret(
    roots: Sequence[str], *, fingerprint: str | None = None, at: tuple[Path, int] | None = None
) -> tuple[list[AllowedValue], list[str]]:
    """Allow back the value a fingerprint or a (file, line) names (`sp context allow`): the
    places it is written, and the fingerprints newly added to context.toml."""
    paths = locate()
    workspace = open_workspace(roots, paths, create_key=True)
    try:
        key = workspace.secrets.key
        if key is None:  # made by open_workspace; never reached
            raise EnvironmentProblem("the fingerprint key could not be made")
        if at is not None:
            found = values_on_line(workspace, key, *at)
        else:
            found = values_with_fingerprint(workspace, key, fingerprint or "")
    finally:
        workspace.close()
    added = add_allowed(paths.context_config, [(v.fingerprint, v.where) for v in found])
    return found, added


def build_server(options: ServeOptions) -> tuple[JournaledServer, WorkspaceService]:
    paths = locate()
    return _assemble(open_workspace(options.roots, paths), paths, options)


def _assemble(
    workspace: Workspace, paths: SafeportPaths, options: ServeOptions
) -> tuple[JournaledServer, WorkspaceService]:
    index = SearchIndex(index_path(paths.cache_dir, workspace), workspace)
    roots = [display_name(os.fsencode(r.path)) for r in workspace.roots]
    journal = ReadsJournal(paths.audit_dir, options.origin, roots)
    service = WorkspaceService(workspace, index, ChangeFeed(workspace), journal)
    server = JournaledServer(
        service,
        name="safeport-context",
        title="safeport workspace (read-only)",
        version=__version__,
        instructions=INSTRUCTIONS + (AGENT_INSTRUCTIONS if options.profile == "agent" else ""),
        log_level="WARNING",
        request_state_security=request_state_security(),
    )
    for register in PROFILES[options.profile]:
        task = register(server, service)
        if task is not None:
            server.background.append(task)
    add_resources(server, service)
    add_prompts(server)
    return server, service


TERMINAL_NOTICE = (
    "safeport context server: speaks MCP (JSON-RPC) on stdin/stdout for an MCP client; "
    "connect one with `sp client install CLIENT`. Ctrl-C stops it."
)


def serve(options: ServeOptions) -> None:
    """Run over stdio until the client closes the connection (or Ctrl-C on a terminal)."""
    verify_installed_package()
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s"
    )
    server, service = build_server(options)
    _warn_of_secret_rules(service)
    if options.profile == "agent" and locate().dedicated:
        # The gateway binds a per-session approval to this process; a same-uid process that
        # could ptrace it (Yama off) would use that grant as its own. Only where the gateway's
        # inspector holds CAP_SYS_PTRACE: a same-user gateway could no longer read this
        # process's binary and environment, and would refuse every proposal as unattested.
        make_undumpable()
    _stop_on_signals(service)  # before the notice that tells a person how to stop it
    if _on_terminal():
        # Someone ran it by hand: say what it is, on stderr (stdout is the protocol's).
        sys.stderr.write(TERMINAL_NOTICE + "\n")
        sys.stderr.flush()
    # The start-up check: stat what the last walk recorded, walk only what changed.
    service.index.refresh_in_background(force=True)
    try:
        anyio.run(_serve_session, server)
    finally:
        service.close()  # the walk stopped and joined, then what it used, then the journal


def serve_http(options: ServeOptions, endpoint: HttpEndpoint) -> None:
    """Serve remote clients over Streamable HTTP until SIGINT/SIGTERM: each access token's
    roots get a server of their own, made on first use from the configured roots."""
    # uvicorn only for this command: stdio serving starts without it.
    from safeport.context_server.http.serving import run as run_http

    verify_installed_package()
    # force: the MCP SDK configures the root logger at INFO when its first server is made
    # (this module's import makes one); at INFO every request would be logged, and rendered,
    # on stderr -- a third of a request's time, measured.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(message)s", force=True
    )
    paths = locate()
    configured = open_workspace(options.roots, paths)
    servers: list[WorkspaceService] = []

    def make(visible: frozenset[str], profile: Profile) -> TenantServer:
        roots = [r for r in configured.roots if root_id(r.name, r.path) in visible]
        workspace = Workspace(roots, configured.policy, configured.secrets)
        # The journal's declared origin says the calls came over HTTP; each record also names
        # the client its token proves.
        origin = "remote" if options.origin == "unknown" else options.origin
        server, service = _assemble(
            workspace, paths, replace(options, profile=profile, origin=origin)
        )
        without_client_roots(server)
        service.index.refresh_in_background(force=True)
        servers.append(service)
        return TenantServer(lowlevel_server(server), tuple(server.background))

    _warn_of_secret_rules_in(configured)
    remote = RemoteService(
        roots=[
            # Display form: a folder's name may hold bytes that are no text.
            RemoteRoot(root_id(r.name, r.path), shown_directory(display_name(os.fsencode(r.path))))
            for r in configured.roots
        ],
        profile=options.profile,
        approvals=HELD.view if options.profile == "agent" else None,
    )
    if options.profile == "agent":
        HELD.pages_at(endpoint.public_url + APPROVAL_PATH)
    app = build_app(endpoint, remote, OAuthGateway(paths, endpoint.public_url), make)
    try:
        run_http(app, endpoint)
    finally:
        for service in servers:
            service.close()


def _warn_of_secret_rules(service: WorkspaceService) -> None:
    _warn_of_secret_rules_in(service.workspace)


def _warn_of_secret_rules_in(workspace: Workspace) -> None:
    """Say on stderr, at start, what the person turned off: it must never go unnoticed."""
    secrets = workspace.secrets
    for root in workspace.roots:
        if root.path in secrets.unredacted_roots:
            log.warning(
                "secret redaction is OFF for the root %s ([secrets] redaction_off in "
                "context.toml): secrets inside its files are served as written",
                display_name(os.fsencode(root.path)),
            )
    if secrets.allowed and secrets.key is None:
        log.warning(
            "[secrets] allow lists fingerprints but there is no fingerprint key yet: "
            "every value stays withheld (run `sp context scan` to make the key)"
        )


async def _serve_session(server: JournaledServer) -> None:
    """Serve stdio, with the profile's background tasks running until the client leaves."""
    async with anyio.create_task_group() as tasks:
        for task in server.background:
            tasks.start_soon(task)
        await serve_stdio(server, DirectCalls(server), tools_change=bool(server.background))
        tasks.cancel_scope.cancel()


def _on_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (OSError, ValueError):
        return False


def _stop_on_signals(service: WorkspaceService) -> None:
    """Ctrl-C (SIGINT) and SIGTERM end the server at once and
    cleanly: the queued journal records are written and fsynced first, then the process exits,
    whatever call is in flight (an answer not yet sent is simply not sent)."""

    def finish() -> None:
        try:
            service.journal.flush()
        except Exception as exc:  # exiting anyway; say that the last records may be missing
            log.warning("reads journal flush at exit failed: %s", type(exc).__name__)
        finally:
            os._exit(0)

    def stop(_signum: int, _frame: object) -> None:
        # Not in the handler itself: the interrupted thread may hold the journal's lock.
        threading.Thread(target=finish, daemon=True, name="stop").start()
        threading.Timer(2.0, os._exit, (0,)).start()

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stop)
