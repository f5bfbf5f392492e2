"""`sp audit checkpoint`: the latest signed checkpoint, from the gateway or the copy it saved.

With no gateway to ask, or one that refused or hung up, the last checkpoint it saved is still
evidence. Anything else (an impostor behind the socket, a folder we may not enter) is raised as
it is, never answered with the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from safeport.errors import Error
from safeport.gateway_client.control_socket import (
    GatewayClient,
    GatewayClosed,
    GatewayNotRunning,
    GatewayRefused,
)
from safeport.shared.paths import SafeportPaths
from safeport.shared.schemas import operations as ops


@dataclass(frozen=True)
class CheckpointText:
    text: str
    # Why the gateway did not answer itself; None when ``text`` is its answer.
    unanswered: Error | None = None


def latest_checkpoint(paths: SafeportPaths) -> CheckpointText:
    try:
        with GatewayClient(paths) as client:
            result = client.call(ops.AUDIT_CHECKPOINT)
    except (GatewayNotRunning, GatewayRefused, GatewayClosed) as exc:
        saved = paths.gateway_audit_dir / "checkpoint.json"
        if not saved.exists():
            raise
        return CheckpointText(saved.read_text(), exc)
    return CheckpointText(json.dumps(result.model_dump(), indent=2, sort_keys=True))
