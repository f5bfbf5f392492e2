"""A requester in its own process: relays JSON lines between stdin/stdout and agent.sock.

Each stdin line is either a message to send, or a command: ``{"spawn": [argv...]}`` runs a child
of this process and prints its output as ``{"child": {...}}`` (to build approver trees).
Replies are printed as they arrive, one JSON object per line.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from safeport.shared.wire import recv_message, send_message


def main() -> int:
    home = Path(os.environ["SAFEPORT_HOME"])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "agent.sock"))
    recv_message(sock)  # the welcome: nothing may be sent before it
    lock = threading.Lock()

    def emit(obj: object) -> None:
        with lock:
            sys.stdout.write(json.dumps(obj) + "\n")
            sys.stdout.flush()

    def pump() -> None:
        try:
            while True:
                emit(recv_message(sock))
        except Exception as exc:
            emit({"closed": type(exc).__name__})

    threading.Thread(target=pump, daemon=True).start()
    emit({"ready": os.getpid()})
    for line in sys.stdin:
        message = json.loads(line)
        if "spawn" in message:
            done = subprocess.run(message["spawn"], capture_output=True, text=True, timeout=30)
            emit({"child": {"rc": done.returncode, "out": done.stdout, "err": done.stderr}})
        else:
            send_message(sock, message)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
