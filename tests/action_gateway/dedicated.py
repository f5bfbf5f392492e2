"""Real OS accounts for dedicated-account tests: a gateway account made by `sp gateway install`,
and human accounts made by useradd, each process started under its uid with setpriv.

Everything lives under one folder in /tmp that the accounts can traverse (pytest's own folders
are 0700 and root's), and every account and folder is removed afterwards.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.gateway import HOST_KEY, REPO
from safeport.shared.launch import sp_command

PASSPHRASE = "dedicated horse battery staple"
POLICY = f"""
[gateway]
approval_timeout_s = 20
auto_lock_minutes = 0

[credentials.build-key]
kind = "ssh-key"
approval = "per-call"

[ssh.hosts.nowhere]
address = "127.0.0.1"
port = 1
user = "deploy"
host_keys = ["{HOST_KEY}"]
credential = "build-key"
connect_timeout_s = 2

[ssh.hosts.nowhere.commands.uptime]
argv = ["uptime"]
"""

GATEWAY_CAPS = (
    "--inh-caps",
    "+sys_ptrace,+dac_read_search",
    "--ambient-caps",
    "+sys_ptrace,+dac_read_search",
)


def setpriv(user: str, *, caps: bool = False) -> list[str]:
    """Run the rest as ``user`` with their groups (and CAP_SYS_PTRACE for the gateway)."""
    argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]
    if caps:
        argv += list(GATEWAY_CAPS)
    return [*argv, "--"]


@dataclass
class Human:
    name: str
    home: Path
    install_file: Path

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.name).pw_uid

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "SAFEPORT_GATEWAY": str(self.install_file),
        }

    @property
    def passphrase_file(self) -> Path:
        return self.home / "pw"

    def run(
        self, *argv: str, stdin: str | None = None, timeout: float = 60, groups: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """As this user with their groups, or with exactly ``groups`` (comma-separated gids)."""
        prefix = setpriv(self.name)
        if groups:
            prefix = ["setpriv", f"--reuid={self.name}", f"--regid={self.name}",
                      f"--groups={groups}", "--"]  # fmt: skip
        return subprocess.run(
            [*prefix, *argv],
            cwd="/",
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )

    def sp(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.run(*sp_command(args), stdin=stdin)

    def python(self, code: str, *args: str, groups: str = "") -> subprocess.CompletedProcess[str]:
        return self.run("/usr/bin/python3", "-c", code, *args, groups=groups)

    def write(self, relative: str, text: str, mode: int = 0o600) -> Path:
        path = self.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        uid = self.uid
        gid = pwd.getpwnam(self.name).pw_gid
        for part in [path, *path.relative_to(self.home).parents]:
            os.chown(self.home / part, uid, gid)
        return path


@dataclass
class DedicatedSetup:
    base: Path
    account: str
    prefix: Path
    humans: dict[str, Human] = field(default_factory=dict)
    gateway: subprocess.Popen[str] | None = None

    @property
    def install_file(self) -> Path:
        return self.prefix / "etc" / "safeport" / "install.toml"

    @property
    def state_dir(self) -> Path:
        return self.prefix / "var" / "lib" / "safeport"

    @property
    def run_dir(self) -> Path:
        return self.prefix / "run" / "safeport"

    @property
    def audit_dir(self) -> Path:
        return self.state_dir / "audit"

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.account).pw_uid

    def gateway_argv(self) -> list[str]:
        return [*setpriv(self.account, caps=True), *sp_command(["gateway", "run"])]

    def gateway_env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "SAFEPORT_GATEWAY": str(self.install_file),
        }

    def precheck_argv(self) -> list[str]:
        """The unit's ExecStartPre (the code check), as systemd would run it."""
        unit = (self.prefix / "etc/systemd/system/safeport-gateway.service").read_text()
        line = next(x for x in unit.splitlines() if x.startswith("ExecStartPre="))
        return shlex.split(line.removeprefix("ExecStartPre="))

    def start_gateway(self) -> None:
        # As the service would: the code check first, then the gateway, both as the account.
        checked = subprocess.run(
            [*setpriv(self.account, caps=True), *self.precheck_argv()],
            capture_output=True, text=True, timeout=120, cwd="/", env=self.gateway_env(),
        )  # fmt: skip
        assert checked.returncode == 0, checked.stderr
        log = (self.base / "gateway.stderr").open("a")
        self.gateway = subprocess.Popen(
            self.gateway_argv(), cwd="/", env=self.gateway_env(), stderr=log, text=True
        )
        log.close()
        deadline = time.monotonic() + 30
        alice = next(iter(self.humans.values()))
        while time.monotonic() < deadline:
            if self.gateway.poll() is not None:
                raise AssertionError(f"the gateway exited: {self.gateway_log()}")
            if alice.sp("gateway", "status").returncode == 0:
                return
            time.sleep(0.2)
        raise AssertionError(f"the gateway did not answer: {self.gateway_log()}")

    def stop_gateway(self) -> int:
        if self.gateway is None:
            return 0
        self.gateway.terminate()
        try:
            code = self.gateway.wait(20)
        except subprocess.TimeoutExpired:
            self.gateway.kill()
            code = self.gateway.wait()
        self.gateway = None
        return code

    def unsealed(self, journal: str) -> list[dict[str, Any]]:
        """The journal's records with their bodies opened, read as the gateway's account (the
        only uid that can open the vault file)."""
        secret = self.base / "account-pw"
        secret.write_text(PASSPHRASE + "\n")
        os.chown(secret, self.uid, pwd.getpwnam(self.account).pw_gid)
        secret.chmod(0o600)
        code = (
            "import json,sys\n"
            "from pathlib import Path\n"
            "from safeport.shared.audit import read_records\n"
            "from safeport.vault.backend import Authority, FileVaultBackend\n"
            "from safeport.vault.secrets import SecretBytes\n"
            "from safeport.vault.store import VaultFile\n"
            "pw = Path(sys.argv[3]).read_bytes().strip()\n"
            "records = read_records(Path(sys.argv[1]))\n"
            "backend = FileVaultBackend(VaultFile(Path(sys.argv[2])))\n"
            "auth = Authority(passphrase=lambda: SecretBytes(pw))\n"
            "print(json.dumps(backend.unseal(auth, records)))\n"
        )
        done = subprocess.run(
            [*setpriv(self.account), sys.executable, "-I", "-c", code,
             str(self.audit_dir / f"{journal}.jsonl"), str(self.state_dir / "vault.sp"),
             str(secret)],
            capture_output=True, text=True, timeout=60, cwd="/",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        records: list[dict[str, Any]] = json.loads(done.stdout)
        return records

    def gateway_log(self) -> str:
        path = self.base / "gateway.stderr"
        return path.read_text() if path.exists() else ""


_PROPOSE = (
    "import json,socket,struct,sys,time\n"
    "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
    "n=struct.unpack('>I',s.recv(4))[0];s.recv(n)\n"  # the welcome comes first
    "m=json.dumps({'v':1,'id':'r1','type':'propose','action':'ssh_exec','host_id':sys.argv[2],"
    "'command_id':'uptime','args':{}}).encode()\n"
    "s.sendall(struct.pack('>I',len(m))+m);time.sleep(60)\n"
)


def propose(setup: DedicatedSetup, human: Human, host_id: str = "nowhere") -> subprocess.Popen[str]:
    """A requester of ``human``'s uid proposing ``uptime`` on ``host_id`` and waiting.

    flock (root) stands for the agent's client, so approvers (also children of the test) are
    not inside the requester's client; setpriv, a wrapper, drops to the human's uid.
    """
    lock = setup.base / "client.lock"
    lock.touch()
    argv = ["flock", "-s", str(lock), *setpriv(human.name), "/usr/bin/python3", "-c", _PROPOSE,
            str(setup.run_dir / "agent.sock"), host_id]  # fmt: skip
    return subprocess.Popen(argv, cwd="/", env=human.env, text=True)


def missing_parts() -> list[str]:
    """What the real-account tests need and this machine lacks."""
    missing = [] if os.geteuid() == 0 else ["root (to create OS accounts)"]
    missing += [tool for tool in ("setpriv", "useradd", "userdel", "usermod", "ssh-keygen")
                if not shutil.which(tool)]  # fmt: skip
    return missing


def unique(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(3)}"


def make_setup(human_names: list[str]) -> DedicatedSetup:
    base = Path(tempfile.mkdtemp(prefix="spd-", dir="/tmp"))
    base.chmod(0o755)
    setup = DedicatedSetup(base=base, account=unique("spgw"), prefix=base / "p")
    (base / "home").mkdir(mode=0o755)
    for name in human_names:
        home = base / "home" / name
        subprocess.run(
            ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
            check=True,
            capture_output=True,
        )
        home.chmod(0o700)
        setup.humans[name] = Human(name=name, home=home, install_file=setup.install_file)
    return setup


def install(
    setup: DedicatedSetup, *humans: str, init: str = "systemd"
) -> subprocess.CompletedProcess[str]:
    args = ["gateway", "install", "--account", setup.account, "--prefix", str(setup.prefix),
            "--init", init]  # fmt: skip
    for name in humans:
        args += ["--human", name]
    return subprocess.run(
        [*sp_command(args)], cwd=REPO, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
    )  # fmt: skip


def tear_down(setup: DedicatedSetup) -> None:
    setup.stop_gateway()
    subprocess.run(
        [*sp_command(["gateway", "uninstall", "--account", setup.account, "--prefix",
                      str(setup.prefix), "--purge"])],
        cwd=REPO, capture_output=True, timeout=60,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
    )  # fmt: skip
    for name in setup.humans:
        subprocess.run(["userdel", "--remove", name], capture_output=True, check=False)
    subprocess.run(["userdel", setup.account], capture_output=True, check=False)
    shutil.rmtree(setup.base, ignore_errors=True)


PYTHON = sys.executable
