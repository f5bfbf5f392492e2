"""A real OpenSSH sshd on 127.0.0.1 for tests and benchmarks (started once per session).

Recipe: a generated host key, a test user whose shell is /bin/sh (created when running as root,
unlocked with `usermod -p '*'` so sshd lets a key in), `UsePAM no`, `StrictModes no` because the
keys live under /tmp, and `AuthorizedKeysFile` pointing into the work folder.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from harness.startup import START_S
from safeport.vault.secrets import SecretBytes, SshKeySecret

TEST_USER = "sp-ssh-test"
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)


@dataclass(frozen=True)
class Sshd:
    port: int
    user: str
    host_key_line: str
    """The pinned form: `ssh-ed25519 AAAA…`."""
    other_host_key_line: str
    """A valid key of the same type that this server does NOT have (a "changed key")."""
    client_key_pem: bytes
    client_key_path: Path
    known_hosts: Path
    shared_dir: Path
    """A folder the test user can write to (markers)."""
    workdir: Path

    def secret(self) -> SshKeySecret:
        return SshKeySecret(SecretBytes(self.client_key_pem))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ensure_user() -> str:
    """The account the test logs in as: a dedicated one when root, else the current user."""
    if os.geteuid() != 0:
        return getpass.getuser()
    if subprocess.run(["id", TEST_USER], capture_output=True, check=False).returncode != 0:
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/sh", TEST_USER],
            capture_output=True,
            check=False,  # a parallel run may have created it first
        )
    subprocess.run(["usermod", "-p", "*", "-s", "/bin/sh", TEST_USER], check=True)
    return TEST_USER


def _openssh_private(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )


def _public_line(key: ed25519.Ed25519PrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode("ascii")
    )


@contextmanager
def running_sshd(
    trusted_user_ca: str | None = None, *, also_authorized: bool = False
) -> Iterator[Sshd]:
    """``trusted_user_ca``: an SSH CA's public key line; the server then lets in certificates
    it signed (``TrustedUserCAKeys``) and reads no authorized key of any user, unless
    ``also_authorized`` (a benchmark's peer: the client key too)."""
    assert SSHD is not None
    user = ensure_user()
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    workdir = Path(tempfile.mkdtemp(prefix="sp-sshd-"))
    workdir.chmod(0o755)  # sshd reads authorized_keys as the target user
    shared = workdir / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    host_key = ed25519.Ed25519PrivateKey.generate()
    host_key_path = workdir / "host_ed25519"
    host_key_path.write_bytes(_openssh_private(host_key))
    host_key_path.chmod(0o600)
    client_key = ed25519.Ed25519PrivateKey.generate()
    client_key_path = workdir / "client_ed25519"
    client_key_path.write_bytes(_openssh_private(client_key))
    client_key_path.chmod(0o600)
    keys_dir = workdir / "authorized_keys"
    keys_dir.mkdir()
    (keys_dir / user).write_text(_public_line(client_key) + "\n")
    (keys_dir / user).chmod(0o644)
    port = free_port()
    known_hosts = workdir / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {_public_line(host_key)}\n")
    keys_lines = [f"AuthorizedKeysFile {keys_dir}/%u"]
    if trusted_user_ca is not None:
        ca_file = workdir / "trusted_user_ca.pub"
        ca_file.write_text(trusted_user_ca.strip() + "\n")
        keys_lines = [
            keys_lines[0] if also_authorized else "AuthorizedKeysFile none",
            f"TrustedUserCAKeys {ca_file}",
        ]
    config = workdir / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {host_key_path}",
                f"PidFile {workdir / 'sshd.pid'}",
                *keys_lines,
                "StrictModes no",
                "UsePAM no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                f"AllowUsers {user}",
                "MaxSessions 64",
                "MaxStartups 64:30:128",
                "LogLevel ERROR",
                "",
            ]
        )
    )
    log = workdir / "sshd.log"  # a file, not a pipe: a full pipe would stall sshd
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    try:
        _wait_for_port(port, process, log)
        yield Sshd(
            port=port,
            user=user,
            host_key_line=_public_line(host_key),
            other_host_key_line=_public_line(ed25519.Ed25519PrivateKey.generate()),
            client_key_pem=_openssh_private(client_key),
            client_key_path=client_key_path,
            known_hosts=known_hosts,
            shared_dir=shared,
            workdir=workdir,
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited early: {log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("sshd did not start listening")
