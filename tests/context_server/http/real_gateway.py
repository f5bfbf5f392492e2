"""A real `sp gateway run` on a real vault (the one `sp approvals` answers), for the remote
flow's tests: remote clients are the gateway's to approve."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.gateway import PASSPHRASE, REPO, clean_env, wait_until
from harness.remote_flow import sp
from safeport.shared.launch import sp_command
from safeport.shared.paths import locate
from safeport.vault import FileVaultBackend, VaultFile
from safeport.vault.secrets import SecretBytes
from tests.vault.vault_factory import FAST_KDF

POLICY = """[gateway]
approval_timeout_s = 60
auto_lock_minutes = 0

[remote]
access_token_minutes = 5
"""


@contextmanager
def real_gateway(home: Path) -> Iterator[subprocess.Popen[str]]:
    (home / "pw").write_text(PASSPHRASE + "\n")
    # Test-sized KDF costs, passed explicitly: every approval here proves the passphrase, and
    # these tests are about the remote flow, not the KDF's cost (`sp vault init` and the
    # production costs have their own tests in tests/cli and tests/vault).
    vault = FileVaultBackend(VaultFile.at(locate(env=clean_env(home))), kdf=FAST_KDF)
    vault.init(SecretBytes(PASSPHRASE.encode()))
    (home / "gateway.toml").write_text(POLICY)
    errors = (home / "gateway.stderr").open("w")
    gateway = subprocess.Popen(
        sp_command(["gateway", "run"]), cwd=REPO, env=clean_env(home), stderr=errors, text=True
    )
    try:
        wait_until(lambda: sp(home, "gateway", "status", check=False).returncode == 0, 20)
        sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
        sp(home, "policy", "accept", "--passphrase-file", str(home / "pw"), "--yes")
        yield gateway
    finally:
        if gateway.poll() is None:
            sp(home, "gateway", "stop", check=False)
            try:
                gateway.wait(timeout=15)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()
        errors.close()
