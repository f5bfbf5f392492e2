"""One control.sock request from its own process: ``control_client OP JSON_PARAMS``.

Prints the reply as JSON. Used to put an approver at a chosen place in a process tree.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from safeport.shared.wire import recv_message, send_message


def main() -> int:
    home = Path(os.environ["SAFEPORT_HOME"])
    op, params = sys.argv[1], json.loads(sys.argv[2])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(home / "run" / "control.sock"))
    send_message(sock, {"v": 1, "id": "c1", "type": "control", "op": op, "params": params})
    print(json.dumps(recv_message(sock)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
