"""`sp doctor` on a healthy setup says no problems: a vault, a running unlocked gateway, an
accepted policy whose service trusts an inline `ca_pem`, and a built context index. Every folder
safeport created on the way has the mode doctor checks (a folder made as the parent of another
used to get the umask's 0755)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.gateway import REPO
from safeport.demo.tls_service import serve_demo_api
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.gateway_client"

__all__ = ["home"]

TOKEN = b"tok-healthy-doctor-9c4"


def test_doctor_reports_no_problem_on_a_healthy_setup_with_an_inline_ca_pem(
    home: Path, tmp_path: Path
) -> None:
    (home / "token").write_bytes(TOKEN)
    pw = str(home / "pw")
    added = sp(home, "vault", "add", "api-token", "--kind", "token", "--value-file",
               str(home / "token"), "--passphrase-file", pw)  # fmt: skip
    assert added.returncode == 0, added.stderr
    workspace = tmp_path / "w"
    workspace.mkdir()
    (workspace / "README.md").write_text("a project\n")
    with serve_demo_api(tmp_path, TOKEN) as service, running_gateway(home):
        (home / "gateway.toml").write_text(
            '[credentials.api-token]\nkind = "token"\n\n[http.services.api]\n'
            f'base_url = "{service.base_url}"\ncredential = "api-token"\n'
            "allow_private_addresses = true\n"
            f'ca_pem = """\n{service.ca_file.read_text().strip()}\n"""\n'
        )
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        indexed = sp(home, "context", "index", "--root", str(workspace))
        assert indexed.returncode == 0, indexed.stderr
        done = sp(home, "doctor")
    assert done.returncode == 0, done.stdout
    assert "FAIL" not in done.stdout and "warn" not in done.stdout, done.stdout
    assert "no problems found" in done.stdout
    assert "ok    https service api: localhost" in done.stdout
    assert f"ok    folder {home / 'cache'}: private (0700, yours)" in done.stdout


def test_every_folder_safeport_creates_in_the_default_layout_passes_doctor(
    tmp_path: Path,
) -> None:
    user = tmp_path / "u"
    user.mkdir(mode=0o700)
    workspace = tmp_path / "w"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(user),
        "XDG_RUNTIME_DIR": str(user / "runtime"),
        "LANG": "C.UTF-8",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "safeport", *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    (user / "runtime").mkdir(mode=0o700)
    assert run("context", "index", "--root", str(workspace)).returncode == 0
    assert (user / ".cache" / "safeport" / "context").is_dir()
    done = run("doctor", "--offline")
    assert "FAIL  folder" not in done.stdout, done.stdout
    assert f"ok    folder {user / '.cache' / 'safeport'}: private" in done.stdout
