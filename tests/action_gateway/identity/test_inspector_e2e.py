"""The gateway account's capabilities live in the inspector process only.

A real system account, given exactly the unit's two capabilities with setpriv, forks the
inspector and drops them: afterwards it cannot read a root process's /proc entries or write its
memory (what CAP_SYS_PTRACE would allow, and what made code in the gateway root), yet it still
identifies a peer of another uid through the inspector; if the inspector dies, identities fail
closed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.action_gateway.dedicated import setpriv
from tests.conftest import need

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.action_gateway.identity"

pytestmark = pytest.mark.integration

SCRIPT = r"""
import ctypes, os, signal, socket, sys
signal.signal(signal.SIGTERM, lambda *_: print("asked to stop", flush=True))
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.inspector import spawn_inspector
from safeport.action_gateway.identity.model import IdentityUnavailable

target, sock_path = int(sys.argv[1]), sys.argv[2]
listener = socket.socket(socket.AF_UNIX)
listener.bind(sock_path)
os.chmod(sock_path, 0o777)
listener.listen(1)
probe = spawn_inspector(LinuxProbe)
status = open("/proc/self/status").read()
print("capeff", status.split("CapEff:")[1].split()[0], flush=True)
try:
    os.readlink(f"/proc/{target}/exe"); print("readlink allowed")
except PermissionError:
    print("readlink refused")
try:
    open(f"/proc/{target}/mem", "r+b"); print("mem allowed")
except PermissionError:
    print("mem refused")
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(b"X" * 8)
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = IoVec(0x400000, 8)
done = libc.process_vm_writev(target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("vm_writev", "refused" if done < 0 and ctypes.get_errno() == 1 else f"allowed {done}")
print("ready", flush=True)
huge, _ = listener.accept()
try:
    probe.resolve(huge); print("huge vouched for")
except IdentityUnavailable as exc:
    print("huge refused:", exc.message, flush=True)
conn, _ = listener.accept()
identity = probe.resolve(conn)
print("peer", identity.uid, identity.process.exe, flush=True)
probe.verify(identity)
print("verified", flush=True)
os.kill(probe.pid, 9)
os.waitpid(probe.pid, 0)
conn2, _ = listener.accept()
try:
    probe.resolve(conn2); print("resolved without inspector")
except IdentityUnavailable:
    print("fails closed")
"""


@pytest.fixture
def account() -> Iterator[tuple[str, Path]]:
    need(os.geteuid() == 0, "creating an OS account needs root")
    need(shutil.which("setpriv") is not None, "setpriv (util-linux) is not installed")
    name = f"spin{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    base = Path(tempfile.mkdtemp(prefix="spi-", dir="/tmp"))
    base.chmod(0o777)
    try:
        yield name, base
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_only_the_inspector_keeps_the_capabilities_and_identities_fail_closed_without_it(
    account: tuple[str, Path],
) -> None:
    name, base = account
    target = subprocess.Popen(["sleep", "60"])  # a root process to aim at
    sock_path = base / "s"
    gateway = subprocess.Popen(
        [*setpriv(name, caps=True), sys.executable, "-I", "-c", SCRIPT, str(target.pid),
         str(sock_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    clients: list[subprocess.Popen[bytes]] = []
    try:
        assert gateway.stdout is not None
        lines: list[str] = []
        while not lines or lines[-1] != "ready":
            line = gateway.stdout.readline().strip()
            assert line, gateway.stderr.read() if gateway.stderr else ""
            lines.append(line)
        capeff = int(lines[0].split()[1], 16)
        assert not capeff >> 19 & 1  # CAP_SYS_PTRACE is gone from the gateway itself
        assert lines[1:4] == ["readlink refused", "mem refused", "vm_writev refused"]
        # First a client whose own description is huge (a 100 KB variable name, three times):
        # it is refused, and the inspector goes on; then plain clients of root, another uid.
        huge_env = {f"BASH_FUNC_{'A' * 100_000}{n}%%": "() { :; }" for n in range(3)}
        for env in (huge_env, None, None):
            clients.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        "import socket,sys,time;s=socket.socket(socket.AF_UNIX);"
                        "s.connect(sys.argv[1]);time.sleep(30)",
                        str(sock_path),
                    ],
                    env=env,
                )
            )
            time.sleep(0.3)
        out, err = gateway.communicate(timeout=60)
        rest = out.split()
        assert "peer" in out and f"peer 0 {os.path.realpath(sys.executable)}" in out, err
        assert "huge refused: the peer's process is too large to read" in out, out + err
        assert "verified" in rest and out.strip().endswith("fails closed"), out + err
        assert "asked to stop" in out  # a gateway without its inspector stops to be restarted
    finally:
        started: list[subprocess.Popen[Any]] = [target, gateway, *clients]
        for proc in started:
            proc.kill()
            proc.wait()
