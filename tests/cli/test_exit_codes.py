"""Exit codes a script can branch on, with the real `sp` and a real gateway: 0 all is well,
1 a problem a human must fix, 2 a part that is down or locked (the gateway not running, the
vault locked or missing). `sp gateway stop` returns once the gateway is gone, and `sp status`
names the folders the code really uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.gateway import REPO
from tests.cli.running_gateway import running_gateway
from tests.cli.test_real_vault_e2e import home, sp

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"

__all__ = ["home"]


def test_vault_unlock_without_a_gateway_says_locked_and_exits_2(home: Path) -> None:
    done = sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "stays locked at rest" in done.stdout
    wrong = home / "wrong"
    wrong.write_text("not the passphrase\n")
    refused = sp(home, "vault", "unlock", "--passphrase-file", str(wrong))
    assert refused.returncode == 1, refused.stderr  # an error, not a state


def test_vault_status_exits_2_at_rest_and_0_when_the_gateway_holds_it_unlocked(
    home: Path,
) -> None:
    at_rest = sp(home, "vault", "status", "--json")
    assert at_rest.returncode == 2
    assert json.loads(at_rest.stdout)["unlocked"] is False
    with running_gateway(home, unlock=False):
        locked = sp(home, "vault", "status")
        assert locked.returncode == 2 and "state: locked" in locked.stdout
        assert sp(home, "vault", "unlock", "--passphrase-file", str(home / "pw")).returncode == 0
        unlocked = sp(home, "vault", "status", "--json")
        assert unlocked.returncode == 0, unlocked.stderr
        assert json.loads(unlocked.stdout)["unlocked"] is True


def test_status_and_doctor_say_down_with_2_while_the_gateway_is_not_running(home: Path) -> None:
    done = sp(home, "status")
    assert done.returncode == 2, done.stdout
    assert "policy    served none" not in done.stdout
    assert "policy    served: unknown while the gateway is not running" in done.stdout
    assert "state     down: the gateway is not running (exit 2)" in done.stdout
    answer = json.loads(sp(home, "status", "--json").stdout)
    assert answer["state"] == "down" and answer["exit_code"] == 2
    doctor = sp(home, "doctor", "--offline")
    assert doctor.returncode == 2, doctor.stdout
    assert "no problems found" in doctor.stdout


def test_status_and_doctor_exit_0_when_running_and_unlocked_and_2_when_locked(
    home: Path,
) -> None:
    with running_gateway(home):
        pw = str(home / "pw")
        assert sp(home, "policy", "accept", "--passphrase-file", pw, "--yes").returncode == 0
        done = sp(home, "status")
        assert done.returncode == 0, done.stdout
        assert "state     ok (exit 0)" in done.stdout
        doctor = sp(home, "doctor", "--offline", "--json")
        assert doctor.returncode == 0, doctor.stdout
        assert json.loads(doctor.stdout)["state"] == "ok"
        assert sp(home, "vault", "lock").returncode == 0
        locked = sp(home, "status")
        assert locked.returncode == 2, locked.stdout
        assert "state     down: the vault is locked (exit 2)" in locked.stdout
        assert sp(home, "doctor", "--offline").returncode == 2


def test_a_broken_journal_is_a_problem_exit_1_even_with_the_gateway_down(home: Path) -> None:
    with running_gateway(home):
        pass  # leaves sessions.jsonl with a start and a stop
    journal = home / "audit" / "sessions.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[1:]))  # the first record cut away
    done = sp(home, "status")
    assert done.returncode == 1, done.stdout
    assert "state     PROBLEM: journal sessions (exit 1)" in done.stdout
    assert json.loads(sp(home, "status", "--json").stdout)["state"] == "problem"


def test_doctor_exits_1_on_a_failed_check_whatever_else_is_down(home: Path) -> None:
    os.chmod(home, 0o755)
    try:
        done = sp(home, "doctor", "--offline", "--json")
    finally:
        os.chmod(home, 0o700)
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["state"] == "problem" and answer["problems"] >= 1


def test_gateway_stop_returns_once_the_process_has_exited_and_its_sockets_are_gone(
    home: Path,
) -> None:
    with running_gateway(home, unlock=False) as gateway:
        done = sp(home, "gateway", "stop")
        assert done.returncode == 0, done.stderr
        # No wait here: the command itself waited. poll() reaps an exited child at once.
        assert gateway.poll() is not None
        assert not (home / "run" / "control.sock").exists()
        assert not (home / "run" / "agent.sock").exists()
        assert f"gateway: stopped (pid {gateway.pid} exited, sockets removed)" in done.stdout
    assert sp(home, "gateway", "stop").stdout.strip() == "gateway: not running"


def test_status_names_the_folders_the_code_uses_without_safeport_home(tmp_path: Path) -> None:
    user = tmp_path / "u"
    user.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(user), "LANG": "C.UTF-8"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path / "rt")
    (tmp_path / "rt").mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-m", "safeport", "status"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    data = user / ".local" / "share" / "safeport"
    assert f"vault in {data}" in done.stdout, done.stdout
    assert f"none yet at {data / 'vault.sp'}" in done.stdout
    assert f"policy in {user / '.config' / 'safeport'}" in done.stdout
    assert f"journals in {user / '.local' / 'state' / 'safeport' / 'audit'}" in done.stdout
    assert "(policy, vault)" not in done.stdout
