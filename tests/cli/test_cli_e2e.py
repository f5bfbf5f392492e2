"""`sp gateway|approvals|sessions|policy` against a real gateway process."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

from harness.fakes import FakeVaultStore, Recorder
from harness.gateway import PASSPHRASE, POLICY, Gateway, clean_env, ssh, wait_card
from safeport.vault import load_checkpoints, verify_checkpoint
from safeport.vault.public_file import encode_public_keys

# The package these tests drive through real processes (see tests/test_layout.py).
SUBJECT = "safeport.cli"


def _sp(gw: Gateway, *args: str) -> tuple[int, str]:
    return _run(gw.home, *args)


def _run(home: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "safeport", *args],
        capture_output=True,
        text=True,
        env={**clean_env(home), "COLUMNS": "200"},
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def test_status_reports_vault_policy_and_pending_changes(gateway: Gateway) -> None:
    code, out = _sp(gateway, "gateway", "status")
    assert code == 0 and "vault: unlocked" in out and "NOT served" not in out
    gateway.write_policy(POLICY + "\n# edited\n")
    code, out = _sp(gateway, "gateway", "reload")
    assert code == 0 and "differs from the accepted policy" in out
    code, out = _sp(gateway, "gateway", "status", "--json")
    assert json.loads(out)["policy"]["pending"] is True


def _patient(gw: Gateway) -> None:
    """Cards wait long enough for several `sp` processes to start on a loaded machine."""
    gw.write_policy(POLICY.replace("approval_timeout_s = 3", "approval_timeout_s = 60"))
    gw.accept_policy()


def test_approvals_and_sessions_listings(gateway: Gateway) -> None:
    _patient(gateway)
    agent = gateway.spawn_agent()
    agent.send(ssh("l1", service="worker"))
    card = wait_card(gateway)
    code, out = _sp(gateway, "approvals", "list")
    assert code == 0 and card["id"] in out and "systemctl status --no-pager worker" in out
    code, out = _sp(gateway, "approvals", "list", "--json")
    assert json.loads(out)[0]["id"] == card["id"]
    code, out = _sp(gateway, "sessions", "list")
    assert code == 0 and out.strip() == "no sessions"
    agent.exit()


def test_sp_refuses_to_send_a_passphrase_to_a_process_that_is_not_sp_gateway_run(
    gateway: Gateway,
) -> None:
    # The test gateway runs as `python -m tests...`, exactly what an impostor would look like.
    _patient(gateway)
    agent = gateway.spawn_agent()
    agent.send(ssh("i1", service="worker"))
    card = wait_card(gateway)
    code, out = _sp(
        gateway,
        "approvals",
        "approve",
        card["id"],
        "--passphrase-file",
        str(gateway.passphrase_file),
    )
    assert code == 1 and "not `sp gateway run`" in out
    assert gateway.control("approvals.list")["result"]["cards"][0]["id"] == card["id"]
    agent.exit()


def test_an_impostor_listening_on_control_sock_never_receives_the_passphrase(
    tmp_path: Path,
) -> None:
    home = tmp_path / "h"
    (home / "run").mkdir(parents=True, mode=0o700)
    (home / "pass").write_text("correct horse battery staple")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(home / "run" / "control.sock"))
    listener.listen(1)
    received = bytearray()

    def serve() -> None:
        conn, _ = listener.accept()
        conn.settimeout(5)
        try:
            while chunk := conn.recv(65536):
                received.extend(chunk)
        except OSError:
            pass
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    code, out = _run(home, "approvals", "approve", "c-1", "--passphrase-file", str(home / "pass"))
    thread.join(10)
    listener.close()
    assert code == 1 and "not `sp gateway run`" in out
    assert b"correct horse" not in received and received == b""


def test_policy_check_prints_the_inventory_and_the_caller_default(gateway: Gateway) -> None:
    code, out = _sp(gateway, "policy", "check")
    assert code == 0
    assert "no [callers] table" in out
    assert "ssh host build-staging: deploy@203.0.113.7:22 with build-key" in out
    assert "authorized_keys on the server: restrict,from=" in out
    assert "is the policy the running gateway serves" in out
    assert "one key per command" in out
    code, out = _sp(gateway, "policy", "check", "--json")
    assert json.loads(out)["credentials"][0]["id"] == "build-key"


def test_policy_check_names_an_unknown_key_and_its_line(gateway: Gateway) -> None:
    gateway.write_policy(POLICY + "\n# edited\n")
    code, out = _sp(gateway, "policy", "check")
    assert code == 0 and "NOT served" in out
    gateway.write_policy(POLICY.replace("auto_lock_minutes = 0", "auto_lock_minutes = 0\nlol = 1"))
    code, out = _sp(gateway, "policy", "check")
    assert code == 2 and "line 5: unknown key `gateway.lol`" in out


def test_print_service_renders_a_systemd_unit_and_a_launchd_plist(gateway: Gateway) -> None:
    code, out = _sp(gateway, "gateway", "run", "--print-service", "systemd")
    assert code == 0 and "ExecStart=" in out and "gateway run" in out and "LimitCORE=0" in out
    assert f"SAFEPORT_HOME={gateway.home}" in out
    code, out = _sp(gateway, "gateway", "run", "--print-service", "launchd")
    assert code == 0 and "<key>ProgramArguments</key>" in out


def _harness_public_keys(gw: Gateway) -> Path:
    """vault.pub.json for the harness's vault, whose keys follow from its passphrase."""
    keys = FakeVaultStore(PASSPHRASE.encode(), Recorder(None)).public_keys()
    path = gw.home / "harness.pub.json"
    path.write_bytes(encode_public_keys(keys))
    return path


def test_audit_checkpoint_exports_signed_heads_that_verify(gateway: Gateway) -> None:
    out_file = gateway.home / "cp.json"
    code, out = _sp(gateway, "audit", "checkpoint", "--out", str(out_file))
    assert code == 0, out
    document = json.loads(out_file.read_text())
    assert document["format"] == "safeport-checkpoint"
    assert {cp["journal"] for cp in document["checkpoints"]} >= {"sessions"}
    # Signed by the gateway with the vault's signer (the production statement), so each head
    # verifies against the vault's public key, and `sp audit verify` matches the journals.
    keys = FakeVaultStore(PASSPHRASE.encode(), Recorder(None)).public_keys()
    loaded = load_checkpoints(out_file.read_bytes(), source=str(out_file))
    for checkpoint in loaded:
        verify_checkpoint(checkpoint, keys)
    public = _harness_public_keys(gateway)
    code, out = _sp(
        gateway, "audit", "verify", "--checkpoint", str(out_file), "--public-keys", str(public)
    )
    assert code == 0, out
    assert f"signer: {keys.checkpoint_fingerprint}" in out
    assert "journal: sessions" in out and "matches the head" in out


def test_a_checkpoint_whose_signature_was_altered_does_not_verify(gateway: Gateway) -> None:
    out_file = gateway.home / "cp.json"
    assert _sp(gateway, "audit", "checkpoint", "--out", str(out_file))[0] == 0
    document = json.loads(out_file.read_text())
    signature = bytearray(base64.b64decode(document["checkpoints"][0]["signature"]))
    signature[0] ^= 1
    document["checkpoints"][0]["signature"] = base64.b64encode(bytes(signature)).decode()
    out_file.write_text(json.dumps(document))
    public = _harness_public_keys(gateway)
    code, out = _sp(
        gateway, "audit", "verify", "--checkpoint", str(out_file), "--public-keys", str(public)
    )
    assert code == 1 and "invalid signature" in out


def test_stop_through_the_cli_journals_the_stop_and_locks_the_vault(gateway: Gateway) -> None:
    code, _ = _sp(gateway, "gateway", "stop")
    assert code == 0
    assert gateway.proc is not None and gateway.proc.wait(10) == 0
    kinds = gateway.kinds("sessions")
    assert kinds[-2:] == ["gateway.stopped", "vault.locked"]


def test_commands_say_clearly_when_no_gateway_runs(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "gateway", "status")
    assert code == 2 and "no gateway is listening" in out
