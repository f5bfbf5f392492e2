"""`sp` sends a secret only to an `sp gateway run` of this installation: the judgement (pure),
then the check against real listener processes through the gateway's identity probe."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from safeport.action_gateway.identity.model import PeerIdentity
from safeport.gateway_client.listener_check import (
    Installation,
    ListenerFacts,
    check_gateway_listener,
    judge_gateway_process,
    psutil_facts,
)
from safeport.shared.gateway_socket import ImpostorGateway

INSTALL = Installation(python="/home/u/.venv/bin/python", sp_script=None)


def _judge(
    argv: Sequence[str],
    injected: tuple[str, ...] | None = (),
    tracer: int = 0,
    installation: Installation = INSTALL,
) -> None:
    judge_gateway_process(ListenerFacts(tuple(argv), tracer, injected), installation)


def test_isolated_python_m_safeport_gateway_run_of_the_same_interpreter_is_accepted() -> None:
    _judge(["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"])


def test_python_m_safeport_without_isolation_is_an_impostor() -> None:
    # It imports from its working folder: any folder with a safeport/ package could be it.
    with pytest.raises(ImpostorGateway):
        _judge(["/home/u/.venv/bin/python", "-m", "safeport", "gateway", "run"])


def test_the_sp_script_of_this_installation_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "sp"
    script.write_text("#!python\n")
    install = Installation(python="/home/u/.venv/bin/python", sp_script=str(script))
    _judge(["/home/u/.venv/bin/python", str(script), "gateway", "run"], None, 0, install)
    _judge(["/home/u/.venv/bin/python", "-I", str(script), "gateway", "run"], None, 0, install)


def test_another_name_of_the_same_interpreter_in_the_same_environment_is_accepted(
    tmp_path: Path,
) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    real = tmp_path / "python3.11"
    real.write_text("")
    (bin_dir / "python").symlink_to(real)
    (bin_dir / "python3").symlink_to(real)
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "python3").symlink_to(real)
    install = Installation(python=str(bin_dir / "python"), sp_script=None)
    _judge([str(bin_dir / "python3"), "-I", "-m", "safeport", "gateway", "run"], (), 0, install)
    with pytest.raises(ImpostorGateway):  # another venv linking the same base interpreter
        _judge([str(other / "python3"), "-I", "-m", "safeport", "gateway", "run"], (), 0, install)


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/python3", "-m", "safeport", "gateway", "run"],  # another interpreter/venv
        ["python", "-m", "safeport", "gateway", "run"],  # relative: cannot be checked
        ["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "status"],
        ["/home/u/.venv/bin/python", "-I", "-m", "safeport"],
        ["/home/u/.venv/bin/python", "-I", "-I", "-m", "safeport", "gateway", "run"],
        ["/home/u/.venv/bin/python", "-c", "-I", "-m", "safeport", "gateway", "run"],
        ["/home/u/.venv/bin/python", "fake_gateway.py", "gateway", "run"],
        ["/home/u/.venv/bin/python", "-m", "tests.action_gateway.gateway_harness"],
        ["nc", "-lU", "control.sock"],
    ],
)
def test_anything_else_is_an_impostor(argv: list[str]) -> None:
    with pytest.raises(ImpostorGateway, match="not `sp gateway run`"):
        _judge(argv)


@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "PYTHONSTARTUP", "LD_AUDIT"])
def test_a_gateway_with_injection_variables_gets_no_secret(name: str) -> None:
    with pytest.raises(ImpostorGateway, match=name):
        _judge(["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"], (name,))


def test_a_traced_gateway_gets_no_secret() -> None:
    with pytest.raises(ImpostorGateway, match="traced"):
        _judge(["/home/u/.venv/bin/python", "-I", "-m", "safeport", "gateway", "run"], (), 4242)


# -- real listeners ---------------------------------------------------------------------------

_LISTENER = """
import os, socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[-1])
server.listen()
print("ready", flush=True)
conn, _ = server.accept()
print("accepted", flush=True)
if sys.stdin.readline().strip() == "exec":
    os.execv("/bin/sleep", ["sleep", "30"])
sys.stdin.readline()
"""


class _Listener:
    def __init__(self, tmp_path: Path, env: dict[str, str] | None = None) -> None:
        tmp_path.mkdir(exist_ok=True)
        self.script = tmp_path / "sp"  # looks like this installation's `sp` script
        self.script.write_text(_LISTENER)
        self.path = tmp_path / "control.sock"
        self.installation = Installation(python=sys.executable, sp_script=str(self.script))
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), "gateway", "run", str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})},
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.path))
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "accepted"
        return sock

    def tell(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[_Listener]:
    found = _Listener(tmp_path)
    yield found
    found.stop()


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@linux_only
def test_a_listener_that_is_this_installations_gateway_run_is_trusted(listener: _Listener) -> None:
    with listener.connect() as sock:
        check_gateway_listener(sock, installation=listener.installation)


@linux_only
def test_a_listener_of_another_program_gets_nothing(listener: _Listener) -> None:
    with listener.connect() as sock, pytest.raises(ImpostorGateway, match="not `sp gateway run`"):
        check_gateway_listener(sock)  # the real installation: a script in a temporary folder


@linux_only
def test_the_environment_the_probe_reads_refuses_a_listener_with_injection_variables(
    tmp_path: Path,
) -> None:
    found = _Listener(tmp_path, env={"PYTHONSTARTUP": "/dev/null", "NODE_OPTIONS": "-r x"})
    try:
        with (
            found.connect() as sock,
            pytest.raises(ImpostorGateway, match="PYTHONSTARTUP set") as caught,
        ):
            check_gateway_listener(sock, installation=found.installation)
        assert "NODE_OPTIONS" not in caught.value.message  # node's cannot reach a Python gateway
    finally:
        found.stop()


@linux_only
def test_a_listener_that_execs_another_program_while_it_is_checked_gets_nothing(
    listener: _Listener,
) -> None:
    # The command line is read after the probe resolved the peer; the probe then confirms the
    # peer is still that process (pidfd, start time, command line), so facts read from what
    # the process became are never judged as the one that connected.
    def read_while_it_execs(identity: PeerIdentity) -> ListenerFacts:
        listener.tell("exec")
        cmdline = Path(f"/proc/{identity.pid}/cmdline")
        deadline = time.monotonic() + 10
        while b"sleep" not in cmdline.read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        genuine = (sys.executable, str(listener.script), "gateway", "run")
        return ListenerFacts(genuine, 0, ())

    with listener.connect() as sock, pytest.raises(ImpostorGateway, match="changed"):
        check_gateway_listener(
            sock, read_facts=read_while_it_execs, installation=listener.installation
        )


@linux_only
def test_the_facts_read_through_psutil_as_on_macos_trust_the_gateway_and_refuse_injection(
    tmp_path: Path,
) -> None:
    # macOS has no /proc: its command line and environment come through psutil, which reads
    # them here from /proc, so the same reader is exercised against real processes.
    genuine = _Listener(tmp_path / "genuine")
    tainted = _Listener(tmp_path / "tainted", env={"LD_PRELOAD": "/tmp/x.so"})
    try:
        with genuine.connect() as sock:
            check_gateway_listener(sock, read_facts=psutil_facts, installation=genuine.installation)
        with (
            tainted.connect() as sock,
            pytest.raises(ImpostorGateway, match="LD_PRELOAD set"),
        ):
            check_gateway_listener(sock, read_facts=psutil_facts, installation=tainted.installation)
    finally:
        genuine.stop()
        tainted.stop()
