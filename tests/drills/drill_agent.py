"""A requester for the drills: proposes HTTP actions on its session grant, forever.

    python -m tests.drills.drill_agent HOME TAG

Each proposal names a service no other proposal names (``TAG-N``), so each prepared action has
its own digest. It prints one JSON line per proposal: ``{"id", "ok", "code"}``, or ``"lost"``
when the gateway went away before answering; then it connects again (the gateway restarts) and
goes on numbering where it was.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from safeport.errors import WireError
from safeport.shared.wire import recv_message, send_message


def proposal(request_id: str, service: str) -> dict[str, Any]:
    return {
        "v": 1,
        "id": request_id,
        "type": "propose",
        "action": "http_request",
        "service_id": "deploy-api",
        "operation_id": "deployment_status",
        "args": {"environment": "staging", "service": service},
    }


def connect(path: Path) -> socket.socket:
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            sock.settimeout(30)
            recv_message(sock)  # the welcome
            return sock
        except (OSError, WireError):
            sock.close()
            time.sleep(0.02)


def main() -> None:
    home, tag = Path(sys.argv[1]), sys.argv[2]
    path = home / "run" / "agent.sock"
    numbers = itertools.count()
    while True:
        sock = connect(path)
        try:
            while True:
                n = next(numbers)
                request_id = f"{tag}-{n}"
                try:
                    send_message(sock, proposal(request_id, f"{tag}-{n}"))
                    reply = recv_message(sock)
                except (OSError, WireError):
                    print(json.dumps({"id": request_id, "lost": True}), flush=True)
                    break
                code = None if reply.get("ok") else reply.get("error", {}).get("code")
                line = {"id": request_id, "ok": bool(reply.get("ok")), "code": code}
                print(json.dumps(line), flush=True)
                if not reply.get("ok"):
                    time.sleep(0.02)  # locked or waiting for a policy: do not spin
        finally:
            sock.close()


if __name__ == "__main__":
    main()
