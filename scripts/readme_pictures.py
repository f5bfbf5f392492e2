"""Regenerate README's pictures from real runs: an approval card, `sp status`, `sp audit show`.

    python scripts/readme_pictures.py [--out DIR]     # writes docs/pictures/*.svg

In a throwaway home it creates a vault with a fresh SSH key, a one-host policy pinned to a fresh
host key, starts a real `sp gateway run`, unlocks and accepts, has an agent process propose a
command (nothing listens at the address, so nothing could run), and captures what `sp` prints
while the card waits and after it is denied. Each capture is printed to a recording rich
console and exported as SVG, so the pictures show exactly what a terminal shows.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rich.console import Console
from rich.text import Text

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "pictures"
SP = [sys.executable, "-I", "-m", "safeport"]
PASSPHRASE = "a long passphrase only for these pictures"  # noqa: S105 - a throwaway vault

POLICY = """\
[gateway]
approval_timeout_s = 120

[credentials.build-key]
kind = "ssh-key"
approval = "per-call"

[ssh.hosts.build]
address = "127.0.0.1"
port = 1
user = "deploy"
host_keys = ["{host_key}"]
credential = "build-key"

[ssh.hosts.build.commands.restart_service]
argv = ["sudo", "systemctl", "restart", "{{service}}"]
params.service = {{ pattern = "^[a-z0-9-]{{1,48}}$" }}
"""

AGENT = textwrap.dedent(
    """
    import os, socket, time
    from safeport.shared.wire import recv_message, send_message
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(os.environ["SAFEPORT_HOME"] + "/run/agent.sock")
    recv_message(sock)
    send_message(sock, {"v": 1, "id": "r1", "type": "propose", "action": "ssh_exec",
                        "host_id": "build", "command_id": "restart_service",
                        "args": {"service": "api"}})
    recv_message(sock)
    """
)


def main() -> int:
    global OUT
    if sys.argv[1:2] == ["--out"]:
        OUT = Path(sys.argv[2])
    OUT.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="sp-pic-"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "SAFEPORT_HOME": str(home), "LANG": "C.UTF-8", "COLUMNS": "90"}  # fmt: skip
    try:
        return _capture(home, env)
    finally:
        subprocess.run([*SP, "gateway", "stop"], env=env, capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)


def _capture(home: Path, env: dict[str, str]) -> int:
    def sp(*args: str) -> str:
        done = subprocess.run([*SP, *args], env=env, capture_output=True, text=True, cwd=home)
        if done.returncode not in (0, 1):
            raise SystemExit(f"sp {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    home.chmod(0o700)
    pw = home / "pw"
    pw.write_text(PASSPHRASE + "\n")
    key = Ed25519PrivateKey.generate()
    (home / "id_ed25519").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
    )
    host = Ed25519PrivateKey.generate().public_key()
    host_key = host.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    (home / "gateway.toml").write_text(POLICY.format(host_key=host_key.decode()))
    sp("vault", "init", "--passphrase-file", str(pw))
    sp("vault", "add", "build-key", "--kind", "ssh-key", "--value-file", str(home / "id_ed25519"),
       "--passphrase-file", str(pw))  # fmt: skip
    gateway = subprocess.Popen(
        [*SP, "gateway", "run"], env=env, cwd=home, stderr=subprocess.DEVNULL
    )
    try:
        _wait(lambda: subprocess.run([*SP, "gateway", "status"], env=env,
                                     capture_output=True).returncode == 0)  # fmt: skip
        sp("vault", "unlock", "--passphrase-file", str(pw))
        sp("policy", "accept", "--passphrase-file", str(pw), "--yes")
        script = home / "agent.py"
        script.write_text(AGENT)
        # setsid -f: the agent's parent exits at once, so its chain on the card is the agent,
        # its client (flock) and init, not this machine's shells.
        subprocess.run(
            ["setsid", "-f", "flock", "-s", str(home / "client.lock"), sys.executable, "-I",
             str(script)],
            env=env, cwd=home, check=True,
        )  # fmt: skip
        _wait(lambda: "approval requested" in sp("approvals", "list"))
        _save("approval-card", "sp approvals watch", sp("approvals", "list"))
        card_id = sp("approvals", "list", "--json").split('"id": "')[1].split('"')[0]
        sp("approvals", "deny", card_id, "--passphrase-file", str(pw))
        _wait(lambda: "no pending approvals" in sp("approvals", "list"))
        _save("status", "sp status", sp("status"))
        shown = sp("audit", "show", "--journal", "actions", "--passphrase-file", str(pw))
        _save("audit-show", "sp audit show --journal actions --passphrase-file pw", shown)
    finally:
        sp("gateway", "stop")
        gateway.wait(30)
    return 0


def _save(name: str, title: str, output: str) -> None:
    console = Console(
        record=True, width=92, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text(f"$ {title}", style="bold"))
    console.print(Text(output.rstrip("\n")))
    path = OUT / f"{name}.svg"
    path.write_text(console.export_svg(title=title))
    print(f"wrote {path}")


def _wait(condition: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise SystemExit("timed out waiting for the gateway")


if __name__ == "__main__":
    raise SystemExit(main())
