"""The program a connected process execs into: asks over the socket it inherited."""

from __future__ import annotations

import json
import socket
import sys

from safeport.shared.wire import recv_message, send_message

sock = socket.socket(fileno=int(sys.argv[1]))
send_message(
    sock,
    {
        "v": 1,
        "id": "x1",
        "type": "propose",
        "action": "ssh_exec",
        "host_id": "build-staging",
        "command_id": "read_service_status",
        "args": {"service": "worker"},
    },
)
print(json.dumps(recv_message(sock)))
