"""Drive a real gateway process over its real sockets from tests and benchmarks."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness.fakes import read_record
from safeport.shared.audit import read_records
from safeport.shared.wire import recv_message, send_message

REPO = Path(__file__).resolve().parents[1]
PASSPHRASE = "correct horse battery staple"
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

POLICY = f"""
[gateway]
approval_timeout_s = 3
auto_lock_minutes = 0
session_max_minutes = 60

[credentials.build-key]
kind = "ssh-key"
approval = "per-call"

[credentials.session-key]
kind = "ssh-key"
approval = "session"

[credentials.limited-key]
kind = "ssh-key"
approval = "session"
rate_per_minute = 2

[credentials.deploy-token]
kind = "token"
approval = "session"

[ssh.hosts.build-staging]
address = "203.0.113.7"
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "build-key"

[ssh.hosts.build-staging.commands.read_service_status]
argv = ["systemctl", "status", "--no-pager", "{{service}}"]
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}

[ssh.hosts.build-staging.commands.fail_probe]
argv = ["true"]

[ssh.hosts.build-staging.commands.slow_status]
argv = ["sleep", "1"]

[ssh.hosts.build-staging.commands.tail_log]
argv = ["tail", "-n", "{{lines}}", "/var/log/app.log"]
params.lines = {{ type = "int", min = 1, max = 500 }}

[ssh.hosts.session-host]
address = "203.0.113.8"
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "session-key"

[ssh.hosts.session-host.commands.uptime]
argv = ["uptime"]

[ssh.hosts.limited-host]
address = "203.0.113.9"
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "limited-key"

[ssh.hosts.limited-host.commands.uptime]
argv = ["uptime"]

[http.services.deploy-api]
base_url = "https://api.example.com"
credential = "deploy-token"

[http.services.deploy-api.operations.deployment_status]
method = "GET"
path = "/v1/{{environment}}/services/{{service}}/status"
response_fields = ["state"]
params.environment = {{ enum = ["staging", "production"] }}
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}
"""


def clean_env(home: Path) -> dict[str, str]:
    """No PYTHON*/LD_* variables: the gateway refuses to start with them."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "SAFEPORT_HOME": str(home),
        "LANG": "C.UTF-8",
    }


def ssh(request_id: str, command: str = "read_service_status", **args: Any) -> dict[str, Any]:
    host = {"uptime": "session-host"}.get(command, "build-staging")
    if command == "limited":
        host, command = "limited-host", "uptime"
    return {
        "v": 1,
        "id": request_id,
        "type": "propose",
        "action": "ssh_exec",
        "host_id": host,
        "command_id": command,
        "args": args,
    }


class AgentSocket:
    """An agent connection from the test process itself (for wire-level tests)."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(str(path))
        if path.name == "agent.sock":
            self.welcome = recv_message(self.sock)  # the gateway speaks first there

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        send_message(self.sock, message)
        return recv_message(self.sock)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> dict[str, Any]:
        return recv_message(self.sock)

    def close(self) -> None:
        self.sock.close()


class AgentProcess:
    """A requester in its own process (see agent_client.py), optionally under a client."""

    def __init__(self, home: Path, prefix: list[str]) -> None:
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "harness.agent_client"],
            cwd=REPO,
            env=clean_env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.next(10)
        self.pid = int(ready["ready"])

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def next(self, timeout: float = 10) -> dict[str, Any]:
        return self._lines.get(timeout=timeout)

    def call(self, message: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        self.send(message)
        return self.next(timeout)

    def spawn(self, argv: list[str], timeout: float = 30) -> dict[str, Any]:
        self.send({"spawn": argv})
        while True:
            line = self.next(timeout)
            if "child" in line:
                return dict(line["child"])
            self._lines.put(line)  # a reply that arrived meanwhile; keep it for later

    def exit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


class Gateway:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.record_path = home / "record.jsonl"
        self.passphrase_file = home / "passphrase"
        self.passphrase_file.write_text(PASSPHRASE)
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_path = home / "gateway.stderr"

    @property
    def agent_path(self) -> Path:
        return self.home / "run" / "agent.sock"

    @property
    def control_path(self) -> Path:
        return self.home / "run" / "control.sock"

    def start(self, *extra: str, env: dict[str, str] | None = None, wait: bool = True) -> None:
        with self.stderr_path.open("ab") as stderr:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "harness.gateway_process",
                    "--record",
                    str(self.record_path),
                    "--passphrase-file",
                    str(self.passphrase_file),
                    *extra,
                ],
                cwd=REPO,
                env=env or clean_env(self.home),
                stderr=stderr,
            )
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"gateway exited: {self.stderr_path.read_text()}")
            try:
                if self.control("status")["ok"]:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("gateway did not come up")

    def stop(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(15)

    def control(self, op: str, **params: Any) -> dict[str, Any]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(15)
        try:
            sock.connect(str(self.control_path))
            send_message(sock, {"v": 1, "id": "t", "type": "control", "op": op, "params": params})
            return recv_message(sock)
        finally:
            sock.close()

    def control_conn(self) -> AgentSocket:
        return AgentSocket(self.control_path)

    def unlock(self) -> dict[str, Any]:
        reply = self.control("vault.unlock", passphrase=PASSPHRASE)
        assert reply["ok"], reply
        return reply

    def write_policy(self, text: str = POLICY) -> None:
        (self.home / "gateway.toml").write_text(text)

    def accept_policy(self) -> str:
        status = self.control("policy.status")["result"]
        reply = self.control("policy.accept", passphrase=PASSPHRASE, digest=status["file"])
        assert reply["ok"], reply
        return str(reply["result"]["policy"])

    def agent(self) -> AgentSocket:
        return AgentSocket(self.agent_path)

    def spawn_agent(self, prefix: list[str] | None = None) -> AgentProcess:
        """A requester whose client is ``flock`` (a plain binary, not an interpreter)."""
        lock = self.home / "client.lock"
        return AgentProcess(self.home, prefix if prefix is not None else ["flock", "-s", str(lock)])

    def touched(self) -> list[dict[str, object]]:
        return read_record(self.record_path)

    def journal(self, name: str) -> list[dict[str, Any]]:
        return read_records(self.home / "audit" / f"{name}.jsonl")

    def kinds(self, name: str) -> list[str]:
        return [str(record["kind"]) for record in self.journal(name)]

    def healthy(self) -> bool:
        assert self.proc is not None
        return self.proc.poll() is None and bool(self.control("status")["ok"])


def copy_as_client(tmp: Path, name: str = "ide-client") -> Path:
    """A copy of the interpreter under a name that is not an interpreter's (an "IDE")."""
    target = tmp / name
    if not target.exists():
        shutil.copy2(os.path.realpath(sys.executable), target)
    return target


def wait_card(gw: Gateway, timeout: float = 30) -> dict[str, Any]:
    """The first pending card, waiting for one to appear (returns as soon as one does; the
    bound is for a loaded machine, where a card has taken seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cards = gw.control("approvals.list")["result"]["cards"]
        if cards:
            return dict(cards[0])
        time.sleep(0.02)
    raise AssertionError("no card appeared")


def decide(gw: Gateway, card_id: str, approve: bool = True) -> dict[str, Any]:
    return gw.control("approvals.decide", id=card_id, approve=approve, passphrase=PASSPHRASE)


def wait_until(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")
