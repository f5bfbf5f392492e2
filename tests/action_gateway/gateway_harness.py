"""Run a real gateway process with the in-memory vault and the recording executor.

    python -m tests.action_gateway.gateway_harness --record FILE --passphrase-file FILE

Locations come from SAFEPORT_HOME as for `sp gateway run`; timeouts are short so the suite
stays fast. Everything else (sockets, identity, ladder, journals) is the real gateway.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from safeport.action_gateway.core import GatewayParts, RuntimeLimits
from safeport.action_gateway.daemon import run_gateway
from safeport.action_gateway.identity_linux import LinuxProbe
from safeport.action_gateway.server import ServerLimits
from safeport.errors import Error
from safeport.shared.paths import locate
from safeport.vault.sealing import AuditSealer
from tests.action_gateway.fakes import FakeVaultStore, Recorder, RecordingExecutor


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, default=None)
    parser.add_argument("--passphrase-file", type=Path, required=True)
    parser.add_argument("--frame-timeout", type=float, default=0.5)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    parser.add_argument("--reap-interval", type=float, default=0.2)
    parser.add_argument("--seal", action="store_true", help="seal journal bodies (as in real use)")
    parser.add_argument("--workers", type=int, default=64)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    record = Recorder(args.record)
    parts = GatewayParts(
        vault_store=FakeVaultStore(args.passphrase_file.read_bytes().strip(), record),
        executor=RecordingExecutor(record),
        probe=LinuxProbe(),
        sealer_for=AuditSealer if args.seal else None,
    )
    limits = RuntimeLimits(
        server=ServerLimits(frame_timeout_s=args.frame_timeout, idle_timeout_s=args.idle_timeout),
        reap_interval_s=args.reap_interval,
        noise_interval_s=0.2,
        worker_threads=args.workers,
    )
    try:
        run_gateway(locate(), parts, limits)
    except Error as exc:
        print(f"gateway: {exc.diagnostic()}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
