"""What a gateway is built from (its parts, chosen in :mod:`assembly`), its runtime limits,
its worker pools, and whom it serves."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from safeport.action_gateway.evidence.journal_space import RESERVE_BYTES
from safeport.action_gateway.evidence.refusal_budget import FULL_PER_WINDOW, WINDOW_S
from safeport.action_gateway.evidence.syslog import LOCAL_SOCKET
from safeport.action_gateway.executors.interface import Executor
from safeport.action_gateway.executors.openbao.sources import OpenBaoSources
from safeport.action_gateway.identity.model import IdentityProbe
from safeport.action_gateway.ladder.credentials import CredentialSources, GrantClients
from safeport.action_gateway.oauth.clients import ProviderClients
from safeport.action_gateway.remote_clients.metadata_documents import FetchRules
from safeport.action_gateway.sockets.connection import ServerLimits
from safeport.shared.audit import DEFAULT_SEGMENT_BYTES, BodySealer
from safeport.shared.paths import SafeportPaths
from safeport.vault.interface import VaultPublicKeys, VaultStore


@dataclass(frozen=True)
class GatewayParts:
    """What the gateway is built from; tests and benchmarks pass their own executor."""

    vault_store: VaultStore
    executor: Executor
    probe: IdentityProbe
    sealer_for: Callable[[VaultPublicKeys], BodySealer] | None = None
    # Identifies control.sock's peers when it must not share ``probe`` with agents (the
    # dedicated mode's inspector processes answer one question at a time); None: ``probe``.
    control_probe: IdentityProbe | None = None
    syslog_local_path: str = LOCAL_SOCKET
    # How remote clients' metadata documents are fetched (tests serve theirs on 127.0.0.1).
    remote_fetch: FetchRules = field(default_factory=FetchRules)
    # The OpenBao/Vault servers' client (assembly's trusts CA files of the gateway's account).
    sources: CredentialSources = field(default_factory=OpenBaoSources)
    # The OAuth providers' client for each oauth credential (tests pass a provider stand-in).
    grant_clients: GrantClients = field(default_factory=ProviderClients)


@dataclass(frozen=True)
class RuntimeLimits:
    server: ServerLimits = field(default_factory=ServerLimits)
    reap_interval_s: float = 1.0
    noise_interval_s: float = 1.0
    checkpoint_interval_s: float = 300.0
    worker_threads: int = 64
    # Rotation size of each journal's active file; drills use a small one to crash mid-rotation.
    journal_segment_bytes: int = DEFAULT_SEGMENT_BYTES
    # Free space proposals leave on the journals' disk for the human's commands.
    journal_reserve_bytes: int = RESERVE_BYTES
    # Per uid, how many refusals are journaled whole per window before they are only counted.
    refusals_per_window: int = FULL_PER_WINDOW
    refusal_window_s: float = WINDOW_S


@dataclass(frozen=True)
class WorkerPools:
    """Proposals may wait minutes for a human, each holding a worker; everything a human or the
    housekeeping needs runs on its own small pool, so waiting proposals can never starve the
    approver who would release them. Identities are read in worker threads too (digests of
    executables and scripts can take a while), agent.sock's and control.sock's apart, so agents
    whose identity is slow to read never delay the human's `sp`."""

    agents: ThreadPoolExecutor
    control: ThreadPoolExecutor
    agent_identity: ThreadPoolExecutor
    control_identity: ThreadPoolExecutor

    @classmethod
    def sized(cls, limits: RuntimeLimits) -> WorkerPools:
        return cls(
            agents=ThreadPoolExecutor(max_workers=limits.worker_threads, thread_name_prefix="sp"),
            control=ThreadPoolExecutor(max_workers=4, thread_name_prefix="sp-control"),
            agent_identity=ThreadPoolExecutor(max_workers=4, thread_name_prefix="sp-identity"),
            control_identity=ThreadPoolExecutor(
                max_workers=2, thread_name_prefix="sp-control-identity"
            ),
        )

    def shutdown(self) -> None:
        for pool in (self.agents, self.control, self.agent_identity, self.control_identity):
            pool.shutdown(wait=False, cancel_futures=True)


def admitted_uids(paths: SafeportPaths) -> frozenset[int]:
    """The uids served on agent.sock and control.sock: this user, or the install's humans."""
    if paths.install is not None:
        return frozenset(paths.install.humans)
    return frozenset({os.geteuid()})
