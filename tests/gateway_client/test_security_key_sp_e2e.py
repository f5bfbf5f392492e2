"""A security key end to end with the real programs: `sp gateway run` on a real vault, a real
sshd, and `sp approver` / `sp approvals watch` / `sp doctor` reaching a software authenticator
(real P-256 keys, CTAP2 through python-fido2's client) on SAFEPORT_SECURITY_KEY_SOCKET. The
human enrols with the passphrase, approves a card with a touch and the command runs; a withheld
touch, a missing key and the passphrase alone approve nothing."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.gateway import REPO, AgentProcess, clean_env, wait_until
from harness.real_sshd import Sshd
from harness.soft_authenticator import AuthenticatorSocket, SoftAuthenticator
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.vault import FileVaultBackend, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.cli.cards.test_approvals_watch import Watcher
from tests.cli.running_gateway import running_gateway
from tests.vault.vault_factory import FAST_KDF

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.gateway_client"

pytestmark = pytest.mark.integration
PASSPHRASE = "correct horse battery staple"


def _policy(sshd: Sshd) -> str:
    return f"""
[gateway]
approval_timeout_s = 30
auto_lock_minutes = 0

[credentials.box-key]
kind = "ssh-key"
approval_factor = "key"

[ssh.hosts.box]
address = "127.0.0.1"
port = {sshd.port}
user = "{sshd.user}"
host_keys = ["{sshd.host_key_line}"]
credential = "box-key"

[ssh.hosts.box.commands.hello]
argv = ["echo", "hello-from-box"]
"""


class Keyed:
    def __init__(self, home: Path, key: SoftAuthenticator, socket_path: Path) -> None:
        self.home = home
        self.key = key
        self.env = {**clean_env(home), "SAFEPORT_SECURITY_KEY_SOCKET": str(socket_path)}

    def sp(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            sp_command(list(args)), cwd=REPO, env=env or self.env, capture_output=True,
            text=True, timeout=90,
        )  # fmt: skip


@pytest.fixture
def keyed(tmp_path: Path, sshd: Sshd) -> Iterator[Keyed]:
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    (home / "pw").write_text(PASSPHRASE + "\n")
    key = SoftAuthenticator(touch_wait_s=3.0)
    server = AuthenticatorSocket(key, tmp_path / "key.sock")
    world = Keyed(home, key, server.path)
    pw = str(home / "pw")
    # Test-sized KDF costs, passed explicitly: these tests are about the key, not the KDF's cost.
    vault = FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF)
    vault.init(SecretBytes(PASSPHRASE.encode()))
    added = world.sp("vault", "add", "box-key", "--kind", "ssh-key", "--value-file",
                     str(sshd.client_key_path), "--passphrase-file", pw)  # fmt: skip
    assert added.returncode == 0, added.stderr
    (home / "gateway.toml").write_text(_policy(sshd))
    try:
        with running_gateway(home):
            accepted = world.sp("policy", "accept", "--passphrase-file", pw, "--yes")
            assert accepted.returncode == 0, accepted.stderr
            yield world
    finally:
        server.close()


class KeyWatcher(Watcher):
    """`sp approvals watch --plain` with the key's socket in its environment."""

    def __init__(self, keyed: Keyed) -> None:
        self.proc = subprocess.Popen(
            sp_command(["approvals", "watch", "--plain", "--passphrase-file",
                        str(keyed.home / "pw")]),
            cwd=REPO, env=keyed.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self.seen = ""


def _propose(home: Path) -> AgentProcess:
    agent = AgentProcess(home, ["flock", "-s", str(home / "client.lock")])
    agent.send({"v": 1, "id": "h1", "type": "propose", "action": "ssh_exec",
                "host_id": "box", "command_id": "hello", "args": {}})  # fmt: skip
    return agent


def test_enrol_then_a_touch_approves_the_card_and_the_command_runs(keyed: Keyed) -> None:
    pw = str(keyed.home / "pw")
    keyed.key.touch.set()  # the human touches the key while it registers
    enrolled = keyed.sp("approver", "enroll", "--name", "blue", "--passphrase-file", pw)
    assert enrolled.returncode == 0, enrolled.stderr
    listed = json.loads(keyed.sp("approver", "list", "--json").stdout)
    assert [key["name"] for key in listed["keys"]] == ["blue"] and listed["factor_in_use"]
    doctor = keyed.sp("doctor").stdout
    assert "holds enrolled key blue" in doctor

    agent = _propose(keyed.home)
    watcher = KeyWatcher(keyed)
    try:
        watcher.until("a touch of security key blue")
        time.sleep(1.6)  # keys typed in the first moments after a card appears are ignored
        # A withheld touch approves nothing, and says what to do.
        watcher.type("y\n")
        watcher.until("touch your security key now")
        seen = watcher.until("was not touched in time")
        assert keyed.key.touches_used == 1  # only the enrolment's
        # The card still waits: asked again, and answered with a touch this time.
        watcher.seen = seen.split("was not touched in time", 1)[1]
        watcher.until("approve? [y/n]", timeout=5)
        watcher.type("y\n")
        watcher.until("touch your security key now")
        keyed.key.touch.set()
        watcher.until("approved")
        reply = agent.next(30)
        assert reply.get("ok"), reply
        assert "hello-from-box" in json.dumps(reply)
    finally:
        watcher.close()
        agent.exit()


def test_without_a_key_the_passphrase_alone_approves_nothing_nor_turns_the_key_off(
    keyed: Keyed,
) -> None:
    pw = str(keyed.home / "pw")
    keyed.key.touch.set()
    assert keyed.sp("approver", "enroll", "--passphrase-file", pw).returncode == 0
    agent = _propose(keyed.home)
    try:
        wait_until(lambda: "c-" in keyed.sp("approvals", "list").stdout, timeout=15)
        card_id = json.loads(keyed.sp("approvals", "list", "--json").stdout)[0]["id"]
        missing = {**keyed.env, "SAFEPORT_SECURITY_KEY_SOCKET": str(keyed.home / "no.sock")}
        refused = keyed.sp("approvals", "approve", card_id, "--passphrase-file", pw, env=missing)
        assert refused.returncode != 0 and "no security key found" in refused.stderr
        assert "SAFEPORT_SECURITY_KEY_SOCKET" in refused.stderr  # what to do
        # Enrolling another key needs an enrolled key's touch: with the passphrase alone it
        # does not start (the gateway's refusal is tested in test_security_key_approvals_e2e).
        rogue = keyed.sp("approver", "enroll", "--name", "rogue", "--passphrase-file", pw,
                         env=missing)  # fmt: skip
        assert rogue.returncode != 0
        listed = json.loads(keyed.sp("approver", "list", "--json").stdout)
        assert [key["name"] for key in listed["keys"]] == ["security key"]
    finally:
        agent.exit()
    # A policy that turns the key off: accepted only with an enrolled key's touch.
    toml = keyed.home / "gateway.toml"
    toml.write_text(toml.read_text().replace('approval_factor = "key"\n', ""))
    refused = keyed.sp("policy", "accept", "--passphrase-file", pw, "--yes", env=missing)
    assert refused.returncode != 0 and "LOOSENED" in refused.stdout
    assert json.loads(keyed.sp("approver", "list", "--json").stdout)["factor_in_use"]
    keyed.key.touch.set()
    accepted = keyed.sp("policy", "accept", "--passphrase-file", pw, "--yes")
    assert accepted.returncode == 0, accepted.stderr
    assert "touch an enrolled key" in accepted.stdout
    assert not json.loads(keyed.sp("approver", "list", "--json").stdout)["factor_in_use"]
