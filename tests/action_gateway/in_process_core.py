"""A GatewayCore in this process on a real vault file and real journals (locked, as after a
start), for tests of what one call into the core does."""

from __future__ import annotations

from pathlib import Path

from harness.fakes import Recorder, RecordingExecutor
from safeport.action_gateway.core.gateway_core import GatewayCore
from safeport.action_gateway.core.parts import GatewayParts, RuntimeLimits
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.ladder.credentials import GrantClients
from safeport.action_gateway.oauth.clients import ProviderClients
from safeport.shared.paths import SafeportPaths, ensure_private_dir, locate
from safeport.vault.store import VaultFile
from tests.vault.vault_factory import FAST_KDF, MemoryKeyring, passphrase


def in_process_core(
    tmp_path: Path, *, grant_clients: GrantClients | None = None
) -> tuple[GatewayCore, SafeportPaths]:
    """The core, its journals inspected as at a start; the caller closes it. ``grant_clients``:
    the OAuth providers' stand-in."""
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    paths = locate({"SAFEPORT_HOME": str(home)})
    for folder in (paths.audit_dir, paths.data_dir, paths.run_dir):
        ensure_private_dir(folder)
    store = VaultFile(paths.vault_file, paths.vault_public_file, keyring=MemoryKeyring())
    store.create(passphrase(), kdf=FAST_KDF).lock()
    parts = GatewayParts(
        vault_store=store,
        executor=RecordingExecutor(Recorder(home / "record.jsonl")),
        probe=LinuxProbe(),
        grant_clients=grant_clients or ProviderClients(),
    )
    core = GatewayCore(paths, parts, RuntimeLimits())
    core.inspect_at_start()
    return core, paths
