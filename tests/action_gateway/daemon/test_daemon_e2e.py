"""Start checks, signals and hardening of the gateway process."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from pathlib import Path

from harness.gateway import POLICY, REPO, Gateway, clean_env, wait_until
from safeport.action_gateway.daemon.hardening import tainted_environment


def _start_and_wait(gw: Gateway, env: dict[str, str] | None = None) -> tuple[int, str]:
    gw.start(env=env, wait=False)
    assert gw.proc is not None
    return gw.proc.wait(20), gw.stderr_path.read_text()


def test_the_gateway_refuses_to_start_with_code_injection_variables(gateway_home: Path) -> None:
    gw = Gateway(gateway_home)
    rc, err = _start_and_wait(gw, {**clean_env(gateway_home), "PYTHONSTARTUP": "/tmp/evil.py"})
    assert rc == 2 and "refusing to start with PYTHONSTARTUP set" in err
    assert not (gateway_home / "run" / "control.sock").exists()


def test_harmless_python_variables_do_not_stop_the_gateway(gateway_home: Path) -> None:
    gw = Gateway(gateway_home)
    env = {**clean_env(gateway_home), "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    gw.start(env=env)
    assert gw.stop() == 0


def test_tainted_environment_names_only_the_dangerous_variables() -> None:
    env = {
        "LD_PRELOAD": "/x.so",
        "PYTHONPATH": "/evil",
        "DYLD_INSERT_LIBRARIES": "y",
        "PATH": "/bin",
        "HOME": "/h",
        "LD_LIBRARY_PATH": "/l",
        "PYTHONWARNINGS": "ignore::evil.Category",
        "PYTHONSTARTUP": "/evil.py",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    assert tainted_environment(env) == [
        "DYLD_INSERT_LIBRARIES",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONWARNINGS",
    ]


def test_a_second_gateway_for_the_same_folder_is_refused(gateway: Gateway) -> None:
    second = Gateway(gateway.home)
    second.stderr_path = gateway.home / "second.stderr"
    rc, err = _start_and_wait(second)
    assert rc == 2 and "another gateway is already running" in err
    assert gateway.healthy()


def test_a_run_folder_open_to_others_is_refused(gateway_home: Path) -> None:
    (gateway_home / "run").mkdir(mode=0o755)
    (gateway_home / "run").chmod(0o755)
    rc, err = _start_and_wait(Gateway(gateway_home))
    assert rc == 2 and "has mode 0755, not 0700" in err


def test_a_symlinked_run_folder_is_refused(gateway_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (gateway_home / "run").symlink_to(elsewhere)
    rc, err = _start_and_wait(Gateway(gateway_home))
    assert rc == 2 and "is a symbolic link" in err


def test_sockets_are_private_and_core_files_are_off(gateway: Gateway) -> None:
    assert gateway.agent_path.stat().st_mode & 0o777 == 0o600
    assert gateway.control_path.stat().st_mode & 0o777 == 0o600
    assert gateway.proc is not None
    limits = Path(f"/proc/{gateway.proc.pid}/limits").read_text()
    core = next(line for line in limits.splitlines() if line.startswith("Max core file size"))
    assert core.split()[4:6] == ["0", "0"]


def test_harden_process_makes_the_process_non_dumpable() -> None:
    code = (
        "import ctypes\n"
        "from safeport.action_gateway.daemon.hardening import harden_process\n"
        "harden_process()\n"
        "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))\n"  # PR_GET_DUMPABLE
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        check=True,
    ).stdout
    assert out.strip() == "0"
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 1  # this test process is untouched


def test_sighup_rereads_the_policy_and_sigterm_stops_cleanly(gateway: Gateway) -> None:
    assert gateway.proc is not None
    gateway.write_policy(POLICY + "\n# edited\n")
    gateway.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "gateway.reloaded" in gateway.kinds("sessions"))
    reloaded = [r["body"] for r in gateway.journal("sessions") if r["kind"] == "gateway.reloaded"]
    assert reloaded[-1]["pending"] is True
    gateway.proc.send_signal(signal.SIGTERM)
    assert gateway.proc.wait(10) == 0
    assert gateway.kinds("sessions")[-2:] == ["gateway.stopped", "vault.locked"]
    assert not gateway.agent_path.exists() and not gateway.control_path.exists()
    # The stop signed the journal heads it wrote (checkpoint from memory).
    checkpoint = (gateway.home / "audit" / "checkpoint.json").read_text()
    assert '"journal": "sessions"' in checkpoint


def test_the_gateway_starts_locked_and_serves_nothing_until_unlocked(gateway_home: Path) -> None:
    gw = Gateway(gateway_home)
    gw.write_policy()
    gw.start()
    try:
        conn = gw.agent()
        reply = conn.call({"v": 1, "id": "c", "type": "catalog"})
        assert reply["error"]["code"] == "locked"
        conn.close()
        assert gw.control("vault.unlock", passphrase="wrong")["error"]["code"] == "denied"
        assert gw.control("status")["result"]["vault"] == "locked"
    finally:
        assert gw.stop() == 0
