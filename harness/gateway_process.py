"""Run a real gateway process with the in-memory vault and the recording executor.

    python -m harness.gateway_process --record FILE --passphrase-file FILE

``--real-executor`` runs the gateway's own SSH and HTTPS executor instead (every name resolves
to 127.0.0.1, where the tests' real sshd and TLS server listen), with ``--ssh-key-file`` as
the key of every ssh-key credential.

Locations come from SAFEPORT_HOME as for `sp gateway run`; timeouts are short so the suite
stays fast. Everything else (sockets, identity, ladder, journals) is the real gateway.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path

from harness.call_files import CallFileExecutor
from harness.fakes import FakeVaultStore, Recorder, RecordingExecutor
from safeport.action_gateway.core.parts import GatewayParts, RuntimeLimits
from safeport.action_gateway.daemon.run import run_gateway
from safeport.action_gateway.evidence.syslog import LOCAL_SOCKET
from safeport.action_gateway.executors.gateway_executor import GatewayExecutor
from safeport.action_gateway.executors.interface import Executor
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.remote_clients.metadata_documents import FetchRules
from safeport.action_gateway.sockets.connection import ServerLimits
from safeport.errors import Error
from safeport.shared.audit.writer import DEFAULT_SEGMENT_BYTES
from safeport.shared.paths import locate
from safeport.vault.interface import VaultStore
from safeport.vault.sealing import AuditSealer
from safeport.vault.store import VaultFile


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument("--passphrase-file", type=Path, required=True)
    parser.add_argument("--frame-timeout", type=float, default=0.5)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    parser.add_argument("--reap-interval", type=float, default=0.2)
    parser.add_argument("--seal", action="store_true", help="seal journal bodies (as in real use)")
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument(
        "--real-vault",
        action="store_true",
        help="the vault file under SAFEPORT_HOME (sealed journals) instead of the in-memory one",
    )
    parser.add_argument("--syslog-socket", default=LOCAL_SOCKET, help='where "local" syslog goes')
    parser.add_argument(
        "--calls-dir",
        type=Path,
        default=None,
        help="the crash drill's executor: one file per call, written before it returns",
    )
    parser.add_argument(
        "--segment-bytes",
        type=int,
        default=DEFAULT_SEGMENT_BYTES,
        help="rotate each journal at this size (small: rotations happen under the drill's kills)",
    )
    parser.add_argument("--real-executor", action="store_true")
    parser.add_argument("--ssh-key-file", type=Path, default=None)
    parser.add_argument(
        "--accepted-policy-file",
        type=Path,
        default=None,
        help="the in-memory vault starts holding this accepted policy (as a real vault keeps it)",
    )
    parser.add_argument(
        "--vault-token-file",
        action="append",
        default=[],
        help="NAME=FILE: the in-memory vault's token NAME is FILE's content, read at each use",
    )
    parser.add_argument("--journal-reserve-bytes", type=int, default=None)
    parser.add_argument("--checkpoint-interval", type=float, default=None)
    parser.add_argument("--refusal-window", type=float, default=None)
    parser.add_argument("--refusals-per-window", type=int, default=None)
    parser.add_argument(
        "--unsafe-documents-on-loopback",
        type=Path,
        default=None,
        help="CA file: client metadata documents are fetched from 127.0.0.1 with this CA "
        "(the test TLS server); never how a gateway runs",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    record = Recorder(args.record)
    paths = locate()
    store: VaultStore = (
        VaultFile.at(paths)
        if args.real_vault
        else FakeVaultStore(
            args.passphrase_file.read_bytes().strip(),
            record,
            ssh_key=args.ssh_key_file.read_bytes() if args.ssh_key_file else None,
        )
    )
    if args.accepted_policy_file is not None:
        assert isinstance(store, FakeVaultStore)
        store.hold_accepted(args.accepted_policy_file.read_text())
    for item in args.vault_token_file:
        name, _, file = item.partition("=")
        assert isinstance(store, FakeVaultStore)
        store.token_files[name] = Path(file)
    executor: Executor = RecordingExecutor(record)
    if args.real_executor:
        executor = GatewayExecutor(resolver=lambda host, port: ["127.0.0.1"])
    if args.calls_dir is not None:
        executor = CallFileExecutor(args.calls_dir, paths.audit_dir / "actions.jsonl")
    fetch = FetchRules()
    if args.unsafe_documents_on_loopback is not None:
        fetch = FetchRules(
            resolver=lambda host, port: ["127.0.0.1"],
            unsafe_allow_private_addresses=True,
            ca_file=str(args.unsafe_documents_on_loopback),
            timeout_s=1.0,
        )
    parts = GatewayParts(
        vault_store=store,
        executor=executor,
        probe=LinuxProbe(),
        sealer_for=AuditSealer if args.seal or args.real_vault else None,
        syslog_local_path=args.syslog_socket,
        remote_fetch=fetch,
    )
    limits = RuntimeLimits(
        server=ServerLimits(frame_timeout_s=args.frame_timeout, idle_timeout_s=args.idle_timeout),
        reap_interval_s=args.reap_interval,
        noise_interval_s=0.2,
        worker_threads=args.workers,
        journal_segment_bytes=args.segment_bytes,
    )
    if args.journal_reserve_bytes is not None:
        limits = replace(limits, journal_reserve_bytes=args.journal_reserve_bytes)
    if args.checkpoint_interval is not None:
        limits = replace(limits, checkpoint_interval_s=args.checkpoint_interval)
    if args.refusal_window is not None:
        limits = replace(limits, refusal_window_s=args.refusal_window)
    if args.refusals_per_window is not None:
        limits = replace(limits, refusals_per_window=args.refusals_per_window)
    try:
        run_gateway(paths, parts, limits)
    except Error as exc:
        print(f"gateway: {exc.diagnostic()}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
