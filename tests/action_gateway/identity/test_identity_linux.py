"""Peer identity from the kernel and /proc, against real processes."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from safeport.action_gateway.identity.argv import script_argument
from safeport.action_gateway.identity.digests import DigestCache
from safeport.action_gateway.identity.linux import LinuxProbe
from safeport.action_gateway.identity.model import IdentityChanged

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _listener(tmp_path: Path) -> tuple[socket.socket, str]:
    path = str(tmp_path / "s.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    return server, path


def _client(
    path: str, tmp_path: Path, then: str = "import time; time.sleep(30)"
) -> subprocess.Popen[bytes]:
    script = tmp_path / "client_script.py"
    script.write_text(
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);s.send(b'x')\n" + then + "\n"
    )
    return subprocess.Popen([sys.executable, str(script), path])


def test_resolve_names_the_peer_its_binary_its_script_and_its_parents(tmp_path: Path) -> None:
    server, path = _listener(tmp_path)
    child = _client(path, tmp_path)
    try:
        conn, _ = server.accept()
        conn.recv(1)
        identity = LinuxProbe().resolve(conn)
        head = identity.process
        assert head.pid == child.pid and identity.uid == os.geteuid()
        real = os.path.realpath(sys.executable)
        assert head.exe == real
        assert head.exe_sha256 == hashlib.sha256(Path(real).read_bytes()).hexdigest()
        assert head.interpreter and head.script == str(tmp_path / "client_script.py")
        script_sha = hashlib.sha256((tmp_path / "client_script.py").read_bytes()).hexdigest()
        assert head.script_sha256 == script_sha
        assert identity.chain[1].pid == os.getpid()  # the parent is this test process
        assert len(identity.chain) <= 16
        # SO_PEERPIDFD exists from Linux 6.5; older kernels fall back to pid + start time.
        assert (identity.pidfd is not None) == _kernel_at_least(6, 5)
        LinuxProbe().verify(identity)
    finally:
        child.kill()
        child.wait()
        server.close()


def _kernel_at_least(major: int, minor: int) -> bool:
    release = platform.release().split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


def test_verify_refuses_a_peer_that_exited(tmp_path: Path) -> None:
    server, path = _listener(tmp_path)
    child = _client(path, tmp_path)
    probe = LinuxProbe()
    conn, _ = server.accept()
    conn.recv(1)
    identity = probe.resolve(conn)
    child.kill()
    child.wait()
    assert not probe.alive(identity)
    with pytest.raises(IdentityChanged):
        probe.verify(identity)
    server.close()


def test_verify_refuses_a_peer_that_exec_d_another_program(tmp_path: Path) -> None:
    server, path = _listener(tmp_path)
    # The child execs only once told to, after it was identified: a fixed delay would race with
    # how long identifying takes on a busy machine.
    then = "import os;s.recv(1);os.execv('/bin/sleep',['sleep','30'])"
    child = _client(path, tmp_path, then=then)
    probe = LinuxProbe()
    conn, _ = server.accept()
    conn.recv(1)
    identity = probe.resolve(conn)
    probe.verify(identity)
    conn.send(b"x")
    # Wait for the exec itself (a fixed sleep loses the race on a loaded machine).
    deadline = time.monotonic() + 20
    while Path(f"/proc/{child.pid}/exe").resolve() != Path("/bin/sleep").resolve():
        assert time.monotonic() < deadline, "the child did not exec"
        time.sleep(0.05)
    assert probe.alive(identity)  # same process, still running...
    with pytest.raises(IdentityChanged, match="not the one that connected"):
        probe.verify(identity)  # ...but no longer the program that connected
    child.kill()
    child.wait()
    server.close()


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        (["python3", "-u", "server.py", "--flag"], "server.py"),
        (["python3", "-m", "safeport", "context", "serve"], "-m safeport"),
        (["python3", "-msafeport"], "-m safeport"),
        (["python3", "-c", "print(1)"], "-c"),
        (["python3", "-W", "ignore", "x.py"], "x.py"),
        (["node", "--require", "hook.js", "index.js"], "index.js"),
        (["sh", "-c", "echo"], "-c"),
        (["bash", "deploy.sh"], "deploy.sh"),
        (["python3"], None),
        # The program from standard input, even with a packaged file as its first argument.
        (["/usr/bin/python3", "-", "/usr/lib/python3/dist-packages/x.py"], "-"),
        (["python3", "-u", "-", "x.py"], "-"),
        (["python3", "-", "--", "x.py"], "-"),
        (["node", "-", "index.js"], "-"),
        (["bash", "-s", "deploy.sh"], "-"),
        (["bash", "-es", "deploy.sh"], "-"),
        # Code on the command line, with its letter combined with others.
        (["python3", "-Ic", "print(1)", "x.py"], "-c"),
        (["python3", "-BEsc", "print(1)"], "-c"),
        (["python3", "-Wignore", "-c", "print(1)", "x.py"], "-c"),
        (["python3", "-Im", "pdb", "x.py"], "-m pdb"),
        (["perl", "-we", "print 1", "x.pl"], "-c"),
        (["perl", "-I", "/usr/share/perl5", "-e", "print 1"], "-c"),
        (["php", "-r", "echo 1;", "x.php"], "-c"),
        (["bash", "-ec", "echo", "deploy.sh"], "-c"),
        (["node", "--eval=1", "index.js"], "-c"),
        # Options with values, attached or not; `--` before the script.
        (["python3", "-X", "dev", "-W", "ignore", "x.py"], "x.py"),
        (["python3", "-Xdev", "x.py"], "x.py"),
        (["python3", "--check-hash-based-pycs", "always", "x.py"], "x.py"),
        (["python3", "--", "x.py"], "x.py"),
        (["python3", "--", "-"], "-"),
        (["perl", "-Mstrict", "x.pl"], "x.pl"),
        (["perl", "-i", "x.pl"], "x.pl"),
        (["bash", "-o", "pipefail", "deploy.sh"], "deploy.sh"),
        (["bash", "+o", "pipefail", "deploy.sh"], "deploy.sh"),
        # A long option's value is not the script (a packaged file there vouches for nothing).
        (["bash", "--rcfile", "/etc/bash.bashrc", "evil.sh"], "evil.sh"),
        (["node", "--redirect-warnings", "/usr/lib/npm-cli.js", "evil.js"], "evil.js"),
        (["node", "--import=/usr/lib/hook.js", "evil.js"], "evil.js"),
    ],
)
def test_script_argument(argv: list[str], script: str | None) -> None:
    assert script_argument(argv) == script


def test_the_digest_cache_rehashes_a_file_rewritten_in_place(tmp_path: Path) -> None:
    target = tmp_path / "bin"
    target.write_bytes(b"one")
    cache = DigestCache()
    first = cache.digest_path(str(target))
    assert first == hashlib.sha256(b"one").hexdigest()
    target.write_bytes(b"two")  # same inode, new mtime/ctime/size
    assert cache.digest_path(str(target)) == hashlib.sha256(b"two").hexdigest()
